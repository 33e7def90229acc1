"""Converts random policies to int8 and loads each in *this* process.

Run as a child by test_litert_guard.py: if LiteRT aborts on any model, this
process dies (and the test fails with its exit status) instead of pytest.
Policies are built through the agents' own export path, in the regimes that
break quantization ranges: saturated heads, dead ReLUs, constant inputs,
all-zero, tiny and huge weights.

  python tests/unit/litert_property_batch.py COUNT SEED
"""
import sys

import numpy as np
import tensorflow as tf
from acme import specs

from agents.d4pg import networks as d4pg_networks
from agents.dqn import networks as dqn_networks
from quarl import quantization
from quarl.litert import LiteRTPolicy

REGIMES = ('normal', 'saturated', 'dead_relu', 'constant_input', 'zero',
           'tiny', 'huge')


def random_case(rng: np.random.Generator, regime: str):
  """(model, variables, observation_size, calibration) for one policy."""
  obs_size = int(rng.integers(1, 30))
  widths = [int(rng.choice([4, 8, 16, 32, 64]))] * int(rng.integers(1, 4))
  if rng.random() < 0.25:
    model = dqn_networks.make_q_network(int(rng.integers(2, 7)), widths)
  else:
    spec = specs.BoundedArray((int(rng.integers(1, 7)),), np.float32,
                              -float(rng.uniform(0.5, 3)),
                              float(rng.uniform(0.5, 3)))
    model = d4pg_networks.make_policy_network(spec, widths).body
  observations = rng.normal(0, rng.uniform(0.1, 10), (96, obs_size))
  if regime == 'constant_input':
    observations = np.full_like(observations, rng.choice([0.0, 1.0, -3.0]))
  observations = observations.astype(np.float32)
  model(tf.constant(observations[:1]))
  variables = model.variables
  weights = [v for v in variables if v.dtype.is_floating]
  kernels = [v for v in weights if len(v.shape) == 2]
  biases = [v for v in weights if len(v.shape) == 1]
  if regime == 'saturated':
    biases[-1].assign(tf.fill(biases[-1].shape, float(rng.choice([-1, 1]) *
                                                       rng.uniform(20, 500))))
    kernels[-1].assign(kernels[-1] * 100.0)
  elif regime == 'dead_relu':
    for bias in biases[:-1]:
      bias.assign(tf.fill(bias.shape, -1e4))
  elif regime in ('zero', 'tiny', 'huge'):
    scale = {'zero': 0.0, 'tiny': 1e-8, 'huge': 1e3}[regime]
    for variable in weights:
      variable.assign(variable * scale)
  return model, variables, obs_size, observations


def main(count: int, seed: int) -> None:
  rng = np.random.default_rng(seed)
  for index in range(count):
    regime = REGIMES[index % len(REGIMES)]
    model, variables, obs_size, observations = random_case(rng, regime)
    print(f'{index} {regime} obs={obs_size}', flush=True)
    converted = quantization.convert_policy(
        model, variables, obs_size, 'int8', observations[:64],
        observations[64:])
    # In-process on purpose: the export path itself must make loadable
    # models; the probe guard is only the second line of defence.
    policy = LiteRTPolicy(converted.model_bytes)
    outputs = np.stack([policy(row) for row in observations[64:]])
    assert np.all(np.isfinite(outputs)), (index, regime)
  print(f'all {count} loaded and ran', flush=True)


if __name__ == '__main__':
  main(int(sys.argv[1]), int(sys.argv[2]))

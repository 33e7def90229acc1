r"""How faithful is the int8 policy, and what would buy fidelity back?

D4PG's exported policy (up to its action head; tanh and the rescale run in
float on the actor) with and without Acme's LayerNorm input block, in two
regimes of squash_fidelity.py: `moderate` (actions spread over the range)
and `bang_bang` (a sharp policy, what a trained Pendulum policy becomes).
Each is converted to full int8 (what actors run) and to int16 activations
with int8 weights, loaded first in a ModelProbe child (LiteRT aborts on
some), then timed in-process on one LiteRT thread as actors run it, beside
TFLite fp32. Errors: |action - fp32 action| / action range on held
observations. One run, side by side:

  python -m benchmarks.int8_fidelity [--width=2048 --seeds=3]
"""
import numpy as np
import tensorflow as tf
from absl import flags
from acme import specs

from agents.d4pg import networks
from benchmarks import policies
from launch import cli
from quarl import envs
from quarl import quantization
from quarl.actors import LiteRTPolicy
from quarl.actors import exploration
from quarl.quantization.calibration import rollout_observations

_ENV = flags.DEFINE_string('env', 'gym:Pendulum-v1',
                           'Task whose observations and actions are used.')
_WIDTH = flags.DEFINE_integer('width', 256, 'Policy width (3 layers).')
_SEEDS = flags.DEFINE_integer('seeds', 3, 'Random policies per cell.')
_SECONDS = flags.DEFINE_float('seconds', 1.0, 'Timed seconds per model.')
for _name in ('width', 'seeds', 'seconds'):
  flags.register_validator(_name, cli.finite_positive,
                           'must be a finite number > 0')

SCHEMES = ('fp32', 'int8', 'int16x8')
REGIMES = ('moderate', 'bang_bang')


def measure_cell(spec, observations, layer_norm: bool, regime: str,
                 seed: int):
  """{scheme: (mean rel err, p95 rel err, us per call) or None}."""
  calibration, held = observations[:256], observations[256:]
  tf.random.set_seed(seed)
  policy = networks.make_policy_network(spec.actions, [_WIDTH.value] * 3,
                                        layer_norm)
  policy(tf.constant(calibration[:1]))
  policies.set_regime(policy, regime, calibration)
  action_range = spec.actions.maximum - spec.actions.minimum

  def to_action(pre_tanh):
    return exploration.unit_to_spec(np.tanh(pre_tanh), spec.actions)

  cells = {}
  for scheme in SCHEMES:
    try:
      model = quantization.convert_policy(
          policy.body, policy.variables, calibration.shape[1], scheme,
          calibration, held, postprocess=to_action,
          output_scale=action_range)
    except quantization.UnloadableModelError:
      cells[scheme] = None
      continue
    runner = LiteRTPolicy(model.model_bytes, num_threads=1)
    cells[scheme] = (model.mean_rel_err, model.p95_rel_err,
                     policies.time_us(runner, observations, _SECONDS.value))
  return cells


def main(argv):
  del argv
  environment = envs.make_environment(_ENV.value, 0)
  spec = specs.make_environment_spec(environment)
  observations = rollout_observations(environment, 320,
                                      np.random.default_rng(0))
  print(f'D4PG 3x{_WIDTH.value} policy on {_ENV.value} observations, '
        f'{_SEEDS.value} seeds per cell (mean); errors of the action range '
        'on 64 held observations; LiteRT us per call, 1 thread\n')
  print('| torso | regime | scheme | loaded | mean rel err | p95 rel err '
        '| us per call | x faster than TFLite fp32 |')
  print('|---|---|---|---|---|---|---|---|')
  for layer_norm in (True, False):
    for regime in REGIMES:
      runs = [measure_cell(spec, observations, layer_norm, regime, seed)
              for seed in range(_SEEDS.value)]
      fp32_us = np.mean([run['fp32'][2] for run in runs])
      for scheme in SCHEMES:
        ok = np.array([run[scheme] for run in runs if run[scheme]])
        figures = '- | - | - | -'
        if len(ok):
          err, p95, us = ok.mean(axis=0)
          figures = f'{err:.4f} | {p95:.4f} | {us:.1f} | {fp32_us / us:.2f}'
        print(f"| {'LayerNorm' if layer_norm else 'ReLU'} | {regime} | "
              f'{scheme} | {len(ok)}/{len(runs)} | {figures} |', flush=True)


if __name__ == '__main__':
  cli.run_main(main, 'int8_fidelity')

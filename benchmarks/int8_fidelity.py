r"""How faithful is the int8 policy, where does its error enter, and what
does fidelity cost in speed?

D4PG's exported policy (up to its action head; tanh and the rescale run in
float on the actor), converted to what actors run (`int8`: hidden layers
int8, the input block and the action head float, quantization/float_ends.py),
to every op int8 (`int8_all`, what actors ran before), and to int16
activations with int8 weights (`int16x8`). Each model is loaded first in a
ModelProbe child (LiteRT aborts on some), then timed in-process on one
LiteRT thread as actors run it, beside TFLite fp32. Errors: |action - fp32
action| / action range on held observations.

With `--run_dir`, the policy is a trained one: the last learner checkpoint of
a D4PG run, on observations of that policy exploring (Gaussian noise of 0.3
of the half-range, as the replay the quantizer calibrates on holds). The
script then also rounds one tensor at a time to its int8 grid in float (the
observation, the action head's output) to show where the error enters.
Without it, random policies in two regimes of squash_fidelity.py:
`moderate` (actions spread over the range) and `bang_bang` (a sharp policy),
with and without Acme's LayerNorm input block. One run, side by side:

  python -m benchmarks.int8_fidelity --run_dir=RUN   # a trained policy
  python -m benchmarks.int8_fidelity [--width=2048 --seeds=3]
"""
import os

import numpy as np
import tensorflow as tf
from absl import flags
from acme import specs

from agents.d4pg import networks
from benchmarks import policies
from launch import cli
from launch.runtime import run_dir as run_dir_lib
from quarl import envs
from quarl import quantization
from quarl.actors import LiteRTPolicy
from quarl.actors import exploration
from quarl.quantization import int8_rules
from quarl.quantization.calibration import rollout_observations

_ENV = flags.DEFINE_string('env', 'gym:Pendulum-v1',
                           'Task whose observations and actions are used '
                           '(random policies; --run_dir brings its own).')
_RUN_DIR = flags.DEFINE_string(
    'run_dir', None, 'A D4PG run directory: measure its trained policy (the '
    'last learner checkpoint) instead of random ones.')
_WIDTH = flags.DEFINE_integer('width', 256, 'Random policy width (3 layers).')
_SEEDS = flags.DEFINE_integer('seeds', 3, 'Random policies per cell.')
_SECONDS = flags.DEFINE_float('seconds', 1.0, 'Timed seconds per model.')
cli.require_positive('width', 'seeds', 'seconds')

SCHEMES = ('fp32', 'int8_all', 'int8', 'int16x8')
REGIMES = ('moderate', 'bang_bang')


def measure(policy, spec, calibration, held):
  """{scheme: (mean rel err, p95 rel err, us per call) or None}."""
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
                     policies.time_us(runner, held, _SECONDS.value))
  return cells


def random_policy(spec, calibration, layer_norm: bool, regime: str,
                  seed: int):
  tf.random.set_seed(seed)
  policy = networks.make_policy_network(spec.actions, [_WIDTH.value] * 3,
                                        layer_norm)
  policy(tf.constant(calibration[:1]))
  policies.set_regime(policy, regime, calibration)
  return policy


def _round_to_int8(values: np.ndarray, calibration: np.ndarray) -> np.ndarray:
  """`values` on the int8 grid TFLite calibrates on `calibration` (one
  scale and zero point for the whole tensor)."""
  scale, zero_point = int8_rules.activation_params(calibration.min(),
                                                   calibration.max())
  return ((np.clip(np.round(values / scale) + zero_point, -128, 127) -
           zero_point) * scale).astype(np.float32)


def rounding_alone(policy, calibration, held):
  """[(what is rounded, mean rel err, p95 rel err)], all else in float."""

  def errors(pre_tanh):
    # tanh spans 2 units of the action range's 1.
    error = np.abs(np.tanh(pre_tanh) - np.tanh(exact)) / 2.0
    return float(np.mean(error)), float(np.percentile(error, 95))

  body = lambda x: policy.body(tf.constant(x)).numpy()  # pylint: disable=unnecessary-lambda-assignment
  exact = body(held)
  return [('the observation (one scale for every dimension)',
           *errors(body(_round_to_int8(held, calibration)))),
          ("the action head's output (pre-tanh)",
           *errors(_round_to_int8(exact, body(calibration))))]


def print_publishes(run_dir: str) -> None:
  """The run's own record: p95_rel_err of every publish (quantizer.csv)."""
  rows = run_dir_lib.read_csv(os.path.join(run_dir, 'quantizer.csv'))
  p95 = [float(row['p95_rel_err']) for row in rows
         if row['status'] == 'published']
  if p95:
    print(f'\nthe run\'s {len(p95)} publishes (quantizer.csv), '
          f'p95_rel_err: {" ".join(f"{value:.3f}" for value in p95)}; '
          f'max {max(p95):.3f}')


def _row(label: str, cells_per_seed) -> str:
  fp32_us = np.mean([cells['fp32'][2] for cells in cells_per_seed])
  rows = []
  for scheme in SCHEMES:
    ok = np.array([cells[scheme] for cells in cells_per_seed
                   if cells[scheme]])
    figures = '- | - | - | -'
    if len(ok):
      err, p95, us = ok.mean(axis=0)
      figures = f'{err:.4f} | {p95:.4f} | {us:.1f} | {fp32_us / us:.2f}'
    rows.append(f'| {label} | {scheme} | {len(ok)}/{len(cells_per_seed)} | '
                f'{figures} |')
  return '\n'.join(rows)


HEADER = ('| policy | scheme | loaded | mean rel err | p95 rel err '
          '| us per call | x faster than TFLite fp32 |\n'
          '|---|---|---|---|---|---|---|')


def main(argv):
  del argv
  rng = np.random.default_rng(0)
  if _RUN_DIR.value:
    try:
      trained = policies.trained_policy(_RUN_DIR.value)
    except (OSError, ValueError, KeyError) as error:
      cli.usage_exit('int8_fidelity', str(error))
    observations = policies.exploring_observations(trained, 1280, rng)
    calibration, held = observations[:256], observations[256:]
    print(f'trained D4PG policy ({trained.label}) from {_RUN_DIR.value}; '
          f'errors of the action range on {len(held)} held observations of it '
          f'exploring; LiteRT us per call, 1 thread\n\n{HEADER}')
    print(_row('trained', [measure(trained.policy, trained.spec, calibration,
                                   held)]))
    print('\nwhere the error enters: one tensor rounded to its int8 grid, '
          'all else float\n\n| rounded | mean rel err | p95 rel err |\n'
          '|---|---|---|')
    for what, mean, p95 in rounding_alone(trained.policy, calibration, held):
      print(f'| {what} | {mean:.4f} | {p95:.4f} |')
    print_publishes(_RUN_DIR.value)
    return
  environment = envs.make_environment(_ENV.value, 0)
  spec = specs.make_environment_spec(environment)
  observations = rollout_observations(environment, 320, rng)
  calibration, held = observations[:256], observations[256:]
  print(f'random D4PG 3x{_WIDTH.value} policies on {_ENV.value} '
        f'observations, {_SEEDS.value} seeds per cell (mean); errors of the '
        f'action range on {len(held)} held observations; LiteRT us per '
        f'call, 1 thread\n\n{HEADER}')
  for layer_norm in (True, False):
    for regime in REGIMES:
      label = f"{'LayerNorm' if layer_norm else 'ReLU'} {regime}"
      print(_row(label, [
          measure(random_policy(spec, calibration, layer_norm, regime, seed),
                  spec, calibration, held)
          for seed in range(_SEEDS.value)]), flush=True)


if __name__ == '__main__':
  cli.run_main(main, 'int8_fidelity')

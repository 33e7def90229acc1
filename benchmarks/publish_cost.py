r"""What one quantizer publish costs: full TFLite conversion vs patching.

For D4PG's exported policy body (Linear-LayerNorm-tanh torso, D4PG's
default, and the plain ReLU MLP TD3 exports), per publish: this process's CPU
milliseconds (time.process_time, every thread) and wall milliseconds,
medians over --publishes publishes, the weights perturbed before each as a
learner would. A publish includes its NaN check and its fidelity check (the
model run in the ModelProbe child, whose own CPU is not this process's);
'patch alone' is just producing the bytes. Not a test: it prints a table.

  python -m benchmarks.publish_cost [--obs_sizes=3,24 --precision=int8]
"""
import contextlib
import functools
import os
import sys
import time

import numpy as np
import tensorflow as tf
from absl import flags
from acme import specs

from agents.d4pg import networks
from launch import cli
from quarl import litert
from quarl import quantization
from quarl.quantization import calibration
from quarl.quantization import patcher

_OBS_SIZES = flags.DEFINE_list('obs_sizes', ['3', '24'],
                               'Observation sizes.')
_WIDTH = flags.DEFINE_integer('width', 256, 'Hidden width (3 layers).')
_TORSOS = flags.DEFINE_list('torsos', ['layer_norm', 'mlp'],
                            'Policy torsos: layer_norm and/or mlp.')
_ACTION_SIZE = flags.DEFINE_integer('action_size', 1, 'Action size.')
_PRECISION = flags.DEFINE_enum('precision', 'int8',
                               patcher.PATCHABLE_PRECISIONS,
                               'Model precision (one that patches).')
_PUBLISHES = flags.DEFINE_integer('publishes', 20,
                                  'Timed publishes per route.')
flags.register_validator(
    'obs_sizes', lambda sizes: cli.widths_or_empty(','.join(sizes)),
    'want comma-separated positive sizes, e.g. 3,24, or empty')
cli.require_positive('width', 'action_size', 'publishes')


def _policy_body(obs_size: int, layer_norm: bool):
  spec = specs.BoundedArray((_ACTION_SIZE.value,), np.float32, -1.0, 1.0)
  body = networks.make_policy_network(spec, [_WIDTH.value] * 3,
                                      layer_norm).body
  body(tf.zeros([1, obs_size]))
  return body


def _perturb(body, rng: np.random.Generator) -> None:
  """A learner step's worth of change."""
  for variable in body.trainable_variables:
    variable.assign_add(
        rng.normal(0, 1e-3, variable.shape).astype(np.float32))


def _timed(call, body, rng, publishes: int):
  """(median CPU ms, median wall ms) of `call()`, perturbing before each."""
  cpu, wall = [], []
  for _ in range(publishes):
    _perturb(body, rng)
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    call()
    cpu.append(time.process_time() - start_cpu)
    wall.append(time.perf_counter() - start_wall)
  return 1e3 * float(np.median(cpu)), 1e3 * float(np.median(wall))


def measure(torso: str, obs_size: int, precision: str, publishes: int,
            probe):
  """Rows of (torso, obs, what, cpu ms, wall ms) for one policy."""
  rng = np.random.default_rng(0)
  body = _policy_body(obs_size, torso == 'layer_norm')
  # Stand-in observations: unit-scale features like normalised MuJoCo state.
  observations = rng.normal(
      size=(calibration.ROLLOUT_SAMPLES, obs_size)).astype(np.float32)
  calibrate = observations[:calibration.CALIBRATION_SAMPLES]
  held = observations[calibration.CALIBRATION_SAMPLES:]
  publisher = quantization.PolicyPublisher(body, obs_size, precision,
                                           probe=probe)
  first = publisher.publish(calibrate, held)  # Converts: the template.
  patched = publisher.publish(calibrate, held)
  if (first.route, patched.route) != ('converted', 'patched'):
    raise RuntimeError(f'{precision} publishes were not patched')
  routes = [
      ('full conversion', functools.partial(
          quantization.convert_policy, body, body.variables, obs_size,
          precision, calibrate, held, probe=probe)),
      ('patched publish', functools.partial(publisher.publish, calibrate,
                                            held)),
      ('patch alone', functools.partial(publisher.make_bytes, calibrate)),
  ]
  return [(torso, obs_size, what, *_timed(call, body, rng, publishes))
          for what, call in routes]


def format_table(rows, width: int, precision: str) -> str:
  full = {(torso, obs): cpu for torso, obs, what, cpu, _ in rows
          if what == 'full conversion'}
  lines = ['| policy | obs | publish | CPU ms | wall ms | full / this (CPU) |',
           '|---|---|---|---|---|---|']
  for torso, obs, what, cpu, wall in rows:
    lines.append(f'| 3x{width} {torso} {precision} | {obs} | {what} | '
                 f'{cpu:.1f} | {wall:.1f} | {full[(torso, obs)] / cpu:.0f}x |')
  return '\n'.join(lines)


@contextlib.contextmanager
def _native_stdout_silenced():
  """The TFLite converter prints an op count straight to fd 1 at every
  conversion; the table should not drown in it."""
  sys.stdout.flush()
  saved = os.dup(1)
  with open(os.devnull, 'wb') as devnull:
    os.dup2(devnull.fileno(), 1)
  try:
    yield
  finally:
    os.dup2(saved, 1)
    os.close(saved)


def main(argv):
  del argv
  probe = litert.ModelProbe()
  rows = []
  with _native_stdout_silenced():
    for torso in _TORSOS.value:
      for obs_size in (int(o) for o in _OBS_SIZES.value):
        rows += measure(torso, obs_size, _PRECISION.value, _PUBLISHES.value,
                        probe)
  probe.close()
  print(format_table(rows, _WIDTH.value, _PRECISION.value))
  print(f'\nMedians over {_PUBLISHES.value} publishes; CPU is this '
        'process only (the probe child that loads and runs each model is '
        'not counted).')


if __name__ == '__main__':
  cli.run_main(main, 'publish_cost')

r"""Actor inference speed: stock TF fp32 vs TFLite fp32/fp16/dyn-int8/int8.

One run, side by side, batch 1, one thread, for ActorQ's policy sizes: the
model actors run (D4PG's exported policy), with a ReLU and with Acme's
LayerNorm torso, plus a GST policy 90% pruned in 4x4 groups as dense and as
sparse int8; and DQN's Nature-CNN Q-network on real Atari frames, also
timed in the whole acting loop (ALE steps + inference: the frames/s an
actor reaches when nothing waits on the learner). Not a test: it prints
tables (and writes benchmarks/results/actor_inference.csv).

  python -m benchmarks.actor_inference [--obs_size=24 --action_size=6]
  python -m benchmarks.actor_inference --sizes= \
      --out=benchmarks/results/actor_inference_nature_cnn.csv  # CNN only
"""
import csv
import os
import time

import numpy as np
import sonnet as snt
import tensorflow as tf
from absl import flags
from acme import specs

from agents.d4pg import networks
from benchmarks import policies
from launch import cli
from quarl.quantization.calibration import rollout_observations
from quarl import compression
from quarl import envs
from quarl.envs import atari_env
from quarl import quantization
from quarl.actors import LiteRTPolicy

_SIZES = flags.DEFINE_string('sizes', '256,2048',
                             'Hidden widths (3 layers); empty: no MLP rows.')
_OBS = flags.DEFINE_integer('obs_size', 24, 'Observation size.')
_ACT = flags.DEFINE_integer('action_size', 6, 'Action size.')
_SECONDS = flags.DEFINE_float('seconds', 2.0, 'Timing budget per cell.')
_CNN_ENV = flags.DEFINE_string(
    'cnn_env', 'ale:Breakout',
    'Atari game whose frames feed the Nature-CNN rows; empty: no CNN rows.')
_OUT = flags.DEFINE_string('out', 'benchmarks/results/actor_inference.csv',
                           'CSV of the table.')

flags.register_validator('sizes', cli.widths_or_empty,
                         'want comma-separated positive widths, e.g. 256,2048, '
                         'or empty')
cli.require_positive('obs_size', 'action_size', 'seconds')

PRECISIONS = ('fp32_tf',) + quantization.PRECISIONS


def _policy(width: int, obs: int, act: int, layer_norm: bool) -> snt.Module:
  """What actors run: D4PG's exported policy (up to its action head)."""
  tf.random.set_seed(0)
  spec = specs.BoundedArray((act,), np.float32, -1.0, 1.0)
  policy = networks.make_policy_network(spec, [width] * 3, layer_norm)
  policy(tf.zeros([1, obs]))
  return policy.body


def measure(width: int, obs: int, act: int, seconds: float,
            layer_norm: bool):
  """Rows of (policy, precision, us, bytes, max_abs_err) for one policy."""
  policy = _policy(width, obs, act, layer_norm)
  width = f'3x{width}' + (' LayerNorm' if layer_norm else '')
  rng = np.random.default_rng(0)
  # Stand-in observations: unit-scale features like normalised MuJoCo state.
  observations = rng.normal(size=(400, obs)).astype(np.float32)
  tf_call = tf.function(policy, input_signature=[
      tf.TensorSpec([1, obs], tf.float32)])
  rows = [(width, 'fp32_tf', policies.time_us(
      lambda o: tf_call(o[None]).numpy(), observations, seconds), None, 0.0)]
  rows += _litert_rows(width, policy, observations[:300], observations[300:],
                       observations, seconds)
  if not layer_norm:
    rows += _pruned_rows(policy, width, obs, observations, seconds)
  return rows


def _litert_rows(label: str, policy, calibration: np.ndarray,
                 held: np.ndarray, inputs: np.ndarray, seconds: float,
                 runners=None):
  """`policy` converted at every TFLite precision (calibrated on flat
  float32 `calibration`), timed in LiteRT on `inputs` as actors pass them;
  each precision's LiteRT runner is left in `runners` when given."""
  rows = []
  for precision in quantization.PRECISIONS:
    model = quantization.convert_policy(policy, policy.variables,
                                        calibration.shape[1], precision,
                                        calibration, held)
    runner = LiteRTPolicy(model.model_bytes, num_threads=1)
    if runners is not None:
      runners[precision] = runner
    rows.append((label, precision, policies.time_us(runner, inputs, seconds),
                 len(model.model_bytes), model.max_abs_err))
  return rows


def measure_nature_cnn(env_name: str, seconds: float):
  """Rows for DQN's Nature CNN (NatureCNNTorso + dense head) on real frames.

  fp32_tf is the stock actor's call: a tf.function on a uint8 frame stack;
  LiteRT models take the same frames (flattened to their one float input)
  and are int8-calibrated on frames of a random-action rollout. Weights are
  fresh (speed and bytes do not depend on them): int8 fidelity on a net
  fitted to frames is tests/unit/test_nature_cnn_int8.py's check.
  """
  environment = envs.make_environment(env_name, 0)
  frames = rollout_observations(environment, 400, np.random.default_rng(0))
  shape = environment.observation_spec().shape
  pixels = frames.reshape((-1,) + shape).astype(np.uint8)
  num_actions = environment.action_spec().num_values
  tf.random.set_seed(0)
  network = snt.Sequential([compression.NatureCNNTorso(shape),
                            snt.Linear(num_actions)])
  network(pixels[:1])
  tf_call = tf.function(network, input_signature=[
      tf.TensorSpec((1,) + shape, tf.uint8)])
  label = f'Nature CNN ({env_name})'
  rows = [(label, 'fp32_tf', policies.time_us(
      lambda o: tf_call(o[None]).numpy(), pixels, seconds), None, 0.0)]
  runners = {}
  rows += _litert_rows(label, network, frames[:300], frames[300:], pixels,
                       seconds, runners)
  acting = {'fp32_tf': _acting_frames_per_s(
                env_name, lambda o: tf_call(o[None]).numpy()[0], seconds),
            'int8': _acting_frames_per_s(env_name, runners['int8'], seconds)}
  return rows, acting


def _acting_frames_per_s(env_name: str, policy, seconds: float) -> float:
  """Emulator frames per second of one greedy actor on `policy` (frame
  skip included), its environment and inference on one thread."""
  environment = envs.make_environment(env_name, 1, training=True)
  timestep = environment.reset()
  steps, start = 0, time.perf_counter()
  while time.perf_counter() - start < max(seconds, 5.0):
    if timestep.last():
      timestep = environment.reset()
    action = int(np.argmax(policy(timestep.observation)))
    timestep = environment.step(np.int32(action))
    steps += 1
  return steps * atari_env.FRAME_SKIP / (time.perf_counter() - start)


def _pruned_rows(policy, width: str, obs: int, observations: np.ndarray,
                 seconds: float):
  """GST's end point: hidden layers 90% pruned in 4x4 groups (the real
  CompressibleLinear path), int8 in TFLite's dense format (XNNPACK) and in
  its sparse format (LiteRT's builtin kernels: XNNPACK has none for it)."""
  for layer in policy.submodules:
    if isinstance(layer, compression.CompressibleLinear):
      layer.to_sparse(0.9)
  rows = []
  for sparse in (False, True):
    model = quantization.convert_policy(policy, policy.variables, obs, 'int8',
                                        observations[:300],
                                        observations[300:], sparse=sparse)
    runner = LiteRTPolicy(model.model_bytes, num_threads=1)
    label = ('int8 90%-pruned, sparse format (builtin kernels)' if sparse
             else 'int8 90%-pruned, dense format (XNNPACK)')
    rows.append((width, label, policies.time_us(runner, observations, seconds),
                 len(model.model_bytes), model.max_abs_err))
  return rows


def format_table(rows) -> str:
  by_key = {(w, p): us for w, p, us, _, _ in rows}
  lines = ['| policy | precision | us/inference | model bytes | max abs err '
           '| speedup vs TF fp32 | speedup vs TFLite fp32 |',
           '|---|---|---|---|---|---|---|']
  for width, precision, us, size, err in rows:
    vs_tf = by_key[(width, 'fp32_tf')] / us
    vs_tflite = by_key[(width, 'fp32')] / us
    lines.append(f'| {width} | {precision} | {us:.1f} | '
                 f'{size if size else "-"} | {err:.4f} | {vs_tf:.1f}x | '
                 f'{vs_tflite:.2f}x |')
  return '\n'.join(lines)


def main(argv):
  del argv
  tf.config.threading.set_intra_op_parallelism_threads(1)
  rows = []
  for width in (int(w) for w in _SIZES.value.split(',') if w):
    for layer_norm in (False, True):
      rows += measure(width, _OBS.value, _ACT.value, _SECONDS.value,
                      layer_norm)
  acting = {}
  if _CNN_ENV.value:
    cnn_rows, acting = measure_nature_cnn(_CNN_ENV.value, _SECONDS.value)
    rows += cnn_rows
  print(format_table(rows))
  if acting:
    print(f'\nActing loop, {_CNN_ENV.value} (ALE + Nature CNN, 1 thread): '
          + ', '.join(f'{p} {fps:.0f} frames/s' for p, fps in acting.items())
          + f'; int8 / fp32_tf: {acting["int8"] / acting["fp32_tf"]:.2f}x')
  os.makedirs(os.path.dirname(_OUT.value) or '.', exist_ok=True)
  with open(_OUT.value, 'w', newline='') as handle:
    writer = csv.writer(handle)
    writer.writerow(['policy', 'precision', 'us', 'model_bytes',
                     'max_abs_err'])
    writer.writerows(rows)


if __name__ == '__main__':
  cli.run_main(main, 'actor_inference')

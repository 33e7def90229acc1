r"""One policy converted at every precision: bytes, error, dtypes, latency.

What ActorQ's quantizer node does every publish cycle, done once outside any
program for notebooks/quantization.ipynb:

  python -m launch.figures.quantization --out=runs/figures/quantization

Writes policy.csv (the network), observations.csv (range of the rollout
observations used for calibration and error), comparison.csv (per precision:
model bytes, max abs error vs fp32, stored weight dtypes, batch-1 latency
through LiteRT vs a tf.function) and comparison.png.
"""
import time

import numpy as np
import tensorflow as tf
from absl import flags
from acme import specs
from acme.tf import networks as acme_networks

from agents.d4pg import networks
from launch import figures
from quarl.quantization import calibration
from quarl import envs
from quarl import quantization
from quarl.actors import LiteRTPolicy

_OUT = flags.DEFINE_string('out', None, 'Directory for the CSV and PNG files.')
_LAYERS = flags.DEFINE_string(
    'policy_layers', '256,256,256',
    "Policy widths; 2048,2048,2048 is ActorQ's paper size.")
_TIMING_S = flags.DEFINE_float('timing_s', 2.0,
                               'Seconds of batch-1 calls per model.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed for weights and the rollout.')
flags.mark_flag_as_required('out')

ENV = 'gym:Pendulum-v1'
OBSERVATION_NAMES = ('cos(theta)', 'sin(theta)', 'theta_dot')


def trained_looking_policy(spec, layers, seed):
  """D4PG's actor network, its head given Glorot weights.

  Acme initialises the head near zero, so a fresh policy outputs ~0 for every
  observation and any quantization error would look negligibly small; random
  head weights spread the actions over the torque range like a trained one.
  """
  tf.random.set_seed(seed)
  policy = networks.make_policy_network(spec.actions, layers)
  networks.create_variables(policy, spec.observations)
  head = next(m for m in policy.submodules
              if isinstance(m, acme_networks.NearZeroInitializedLinear))
  head.w.assign(tf.keras.initializers.GlorotUniform(seed=seed)(head.w.shape))
  return policy


def time_us(call, inputs, seconds):
  """Mean microseconds per call after a short warm-up (tracing, delegates)."""
  for observation in inputs[:16]:
    call(observation)
  calls, start = 0, time.perf_counter()
  while time.perf_counter() - start < seconds:
    for observation in inputs:
      call(observation)
    calls += len(inputs)
  return 1e6 * (time.perf_counter() - start) / calls


def comparison_rows(policy, observation_size, calibration, held, seconds):
  tf_policy = tf.function(policy, input_signature=[
      tf.TensorSpec([1, observation_size], tf.float32)])
  baseline_us = time_us(lambda o: tf_policy(o[None]).numpy(), held, seconds)
  rows = [dict(precision='fp32_tf', model_bytes=None, convert_s=None,
               max_abs_err=0.0, weight_dtypes='float32 (TF variables)',
               us_per_inference=baseline_us, speedup_vs_fp32_tf=1.0,
               size_vs_fp32=None)]
  fp32_bytes = None
  for precision in quantization.PRECISIONS:
    model = quantization.convert_policy(policy, policy.variables,
                                        observation_size, precision,
                                        calibration, held)
    size = len(model.model_bytes)
    fp32_bytes = fp32_bytes or size  # PRECISIONS starts with fp32
    us = time_us(LiteRTPolicy(model.model_bytes), held, seconds)
    rows.append(dict(
        precision=precision, model_bytes=size, convert_s=model.convert_s,
        max_abs_err=model.max_abs_err,
        weight_dtypes=', '.join(f'{name}: {count:,}' for name, count in sorted(
            quantization.weight_dtypes(model.model_bytes).items())),
        us_per_inference=us, speedup_vs_fp32_tf=baseline_us / us,
        size_vs_fp32=size / fp32_bytes))
    print(f'{precision:>12}: {size:>8,} bytes, {us:8.1f} us/inference')
  return rows


def plot(rows, out):
  plt = figures.pyplot()
  figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
  left.bar([r['precision'] for r in rows],
           [r['us_per_inference'] for r in rows], color='tab:blue')
  left.set(ylabel='us / inference (log scale)', yscale='log',
           title='batch-1 latency, 1 thread')
  models = [r for r in rows if r['model_bytes']]
  right.bar([r['precision'] for r in models],
            [r['model_bytes'] / 1024 for r in models], color='tab:orange')
  right.set(ylabel='model size (KiB)', title='TFLite flatbuffer size')
  for axis in (left, right):
    axis.tick_params(axis='x', rotation=20)
  figures.save_figure(figure, out, 'comparison.png')


def main(argv):
  del argv
  layers = figures.parse_layers('policy_layers', _LAYERS.value)
  figures.positive('timing_s', _TIMING_S.value)
  out = figures.out_dir(_OUT.value)
  tf.get_logger().setLevel('ERROR')  # the converter's per-model INFO lines
  environment = envs.make_environment(ENV, seed=_SEED.value)
  spec = specs.make_environment_spec(environment)
  policy = trained_looking_policy(spec, layers, _SEED.value)
  observation_size = int(np.prod(spec.observations.shape))
  figures.write_csv(out, 'policy.csv', [dict(
      env=ENV, policy_layers=_LAYERS.value, observation_size=observation_size,
      action_shape=spec.actions.shape, parameters=sum(
          int(np.prod(v.shape)) for v in policy.trainable_variables))])
  # Full-int8 calibration needs observations the actor will really see: the
  # quantizer node's fallback rollout with uniformly random actions.
  observations = calibration.rollout_observations(
      environment, calibration.ROLLOUT_SAMPLES,
      np.random.default_rng(_SEED.value))
  figures.write_csv(out, 'observations.csv', [
      dict(statistic=name, **dict(zip(OBSERVATION_NAMES, map(float, values))))
      for name, values in (('min', observations.min(0)),
                           ('mean', observations.mean(0)),
                           ('max', observations.max(0)))])
  rows = comparison_rows(policy, observation_size,
                         observations[:calibration.CALIBRATION_SAMPLES],
                         observations[calibration.CALIBRATION_SAMPLES:],
                         _TIMING_S.value)
  figures.write_csv(out, 'comparison.csv', rows)
  plot(rows, out)


if __name__ == '__main__':
  figures.run(main)

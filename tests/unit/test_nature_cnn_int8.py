"""The Nature-CNN Q-network as a full-int8 LiteRT actor model, calibrated on
real Breakout frames: int8 weights, and the greedy action of fp32 kept."""
import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from quarl.quantization.calibration import rollout_observations
from quarl import compression
from quarl import envs
from quarl import quantization
from quarl.actors import LiteRTPolicy

GAME = 'ale:Breakout'


def _fit_to_frames(network, frames, rng, steps=40):
  """A few Adam steps towards Q-values that depend on what is where on the
  screen (random projections of the coarse newest frame). A freshly
  initialised net gives nearly the same Q-values for every frame, which
  would make argmax agreement trivial."""
  newest = frames.reshape(-1, 84, 84, 4)[..., -1]
  coarse = newest.reshape(-1, 12, 7, 12, 7).mean(axis=(2, 4)).reshape(
      len(frames), -1)
  targets = (coarse - coarse.mean(0)) @ rng.normal(size=(coarse.shape[1], 4))
  targets = ((targets - targets.mean(0)) / targets.std(0)).astype(np.float32)
  optimizer = snt.optimizers.Adam(1e-3)

  @tf.function
  def step(x, y):
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(tf.square(network(x) - y))
    optimizer.apply(tape.gradient(loss, network.trainable_variables),
                    network.trainable_variables)

  for _ in range(steps):
    batch = rng.integers(0, len(frames), 32)
    step(frames[batch], targets[batch])


@pytest.fixture(scope='module')
def breakout_q_network():
  environment = envs.make_environment(GAME, 0)
  rng = np.random.default_rng(0)
  frames = rollout_observations(environment, 320, rng)
  assert frames.shape == (320, 84 * 84 * 4)
  num_actions = environment.action_spec().num_values
  tf.random.set_seed(0)
  network = snt.Sequential([compression.NatureCNNTorso(),
                            snt.Linear(num_actions)])
  network(frames[:1])
  _fit_to_frames(network, frames[:256], rng)
  return network, frames


def test_int8_cnn_keeps_the_fp32_greedy_action(breakout_q_network):
  network, frames = breakout_q_network
  calibration, held = frames[:256], frames[256:]
  model = quantization.convert_policy(network, network.variables,
                                      frames.shape[1], 'int8', calibration,
                                      held)
  weights = quantization.weight_dtypes(model.model_bytes)
  kernels = [int(np.prod(v.shape)) for v in network.trainable_variables
             if len(v.shape) > 1]
  # Every convolution and hidden layer int8; the Q-value head in float
  # (quantization/float_ends.py).
  assert sum(kernels[:-1]) <= weights.get('int8', 0) < sum(kernels)
  assert weights.get('float32', 0) >= kernels[-1]
  # The actor's path: uint8 frames straight from the environment.
  pixels = held.reshape(-1, 84, 84, 4).astype(np.uint8)
  runner = LiteRTPolicy(model.model_bytes, num_threads=1)
  int8_actions = np.array([np.argmax(runner(frame)) for frame in pixels])
  fp32_actions = np.argmax(network(pixels).numpy(), axis=-1)
  assert len(set(fp32_actions)) >= 3  # Greedy choice depends on the frame.
  assert np.mean(int8_actions == fp32_actions) >= 0.9
  assert model.argmax_mismatch <= 0.1

"""PPO on ale:Breakout: the clipped surrogate on a real queue filled by the
agent's own TF actor playing the learner's policy."""
import os
import subprocess
import sys

import acme
import numpy as np
import pytest
from acme.utils import loggers

from agents import replay
from agents import ppo
from quarl import envs
from onpolicy_helpers import act
from onpolicy_helpers import start

UNROLL = 8
BATCH = 4
ANNEAL_STEPS = 4


@pytest.fixture(scope='module')
def setup():
  agent, server, client, bundle, logger = start(
      ppo, unroll_length=UNROLL, batch_size=BATCH, queue_size=16,
      anneal_steps=ANNEAL_STEPS)
  act(agent, bundle.learner, client, 2 * BATCH)
  yield agent, client, bundle, logger
  server.stop()


def test_ratio_is_one_until_the_learner_moves(setup):
  agent, client, bundle, logger = setup
  before = bundle.learner.get_variables(['policy'])[0]
  bundle.learner.step()
  bundle.learner.step()
  first, second = logger.rows
  # The first batch was played by the very policy it updates: ratio 1 (up
  # to float rounding) before its first epoch.
  assert float(first['max_ratio_error']) < 1e-4
  assert abs(float(first['behaviour_kl'])) < 1e-6
  # The second was played by that same step-0 policy, one update behind.
  assert float(second['policy_lag']) == 1.0
  assert float(second['max_ratio_error']) > 1e-3
  assert client.server_info()[replay.REPLAY_TABLE].current_size == 0
  # Each epoch takes one optimizer step per minibatch.
  config = agent.config
  optimizer = bundle.checkpointables['optimizer']
  assert int(optimizer.step.numpy()) == (
      2 * config.num_epochs * config.num_minibatches)
  # The learning rate falls linearly to 0 over ANNEAL_STEPS learner steps.
  assert [float(row['learning_rate']) for row in logger.rows] == (
      pytest.approx([config.learning_rate * (1 - step / ANNEAL_STEPS)
                     for step in (1, 2)]))
  after = bundle.learner.get_variables(['policy'])[0]
  assert any(not np.array_equal(a, b) for a, b in zip(after, before))
  assert all(np.isfinite(float(row['loss'])) for row in logger.rows)


def test_ppo_keeps_the_a2c_torso_for_compression(setup):
  assert len(setup[2].compressible_layers) == 3


def test_flat_vectors_get_an_mlp_torso_with_a_dense_input_layer():
  """Football's simple115v2 is a flat vector: CartPole stands in."""
  game = 'gym:CartPole-v1'
  agent, server, client, bundle, logger = start(
      ppo, game=game, unroll_length=UNROLL, batch_size=BATCH,
      queue_size=16, mlp_layers=(64, 32, 16))
  try:
    torso = bundle.networks[0].torso
    assert [layer.output_size for layer in torso.layers] == [64, 32, 16]
    assert bundle.compressible_layers == list(torso.layers[1:])
    act(agent, bundle.learner, client, BATCH, game=game)
    weights = bundle.networks[0].policy.trainable_variables
    before = [w.numpy() for w in weights]
    bundle.learner.step()
    assert all(not np.array_equal(w.numpy(), b)
               for w, b in zip(weights, before))
    assert np.isfinite(float(logger.rows[-1]['loss']))
  finally:
    server.stop()


def test_a_tf_actor_plays_the_new_policy_within_a_trajectory():
  """After the learner moves, an actor's next trajectories come from the
  new policy: at Acme's pull period of 1,000 env steps the whole second
  batch would still be the first policy's (lag 1)."""
  game = 'gym:CartPole-v1'
  agent, server, client, bundle, logger = start(
      ppo, game=game, unroll_length=UNROLL, batch_size=BATCH,
      queue_size=16, mlp_layers=(16,))
  try:
    environment = envs.make_environment(game, 0, training=True)
    actor = agent.make_tf_actor(bundle.learner, agent.make_adder(client),
                                1.0, np.random.default_rng(0))
    loop = acme.EnvironmentLoop(environment, actor,
                                logger=loggers.NoOpLogger())
    loop.run(num_steps=BATCH * UNROLL + 1)
    bundle.learner.step()
    loop.run(num_steps=BATCH * UNROLL)
    bundle.learner.step()
    assert float(logger.rows[-1]['policy_lag']) < 0.75
  finally:
    server.stop()


def test_ppo_imports_before_a2c():
  """The launcher imports only the chosen agent's package."""
  root = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  result = subprocess.run(
      [sys.executable, '-c', 'import agents; agents.lookup("ppo")'],
      cwd=root, capture_output=True, text=True, timeout=120,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
  assert result.returncode == 0, result.stderr[-2000:]

"""A2C on ale:Breakout: a real Reverb queue filled by the agent's own adder
and TF actor, consumed by the compiled learner."""
import numpy as np
import pytest
import reverb
import tensorflow as tf
import tree
from acme import specs

from agents import a2c
from agents.a2c import learning
from agents import interface
from agents import replay
from onpolicy_helpers import act
from onpolicy_helpers import GAME
from onpolicy_helpers import start
from quarl import envs
from quarl.actors import exploration
from replay_helpers import export_with_learner_weights

UNROLL = 8
TRAJECTORIES = 24  # Six learner batches of four.


@pytest.fixture(scope='module')
def setup():
  agent, server, client, bundle, logger = start(
      a2c, unroll_length=UNROLL, batch_size=4, queue_size=32)
  initial = bundle.learner.get_variables(['policy'])[0]
  act(agent, bundle.learner, client, TRAJECTORIES)
  yield agent, client, bundle, logger, initial
  server.stop()


def _trajectories(client, table, num_samples):
  """Sampled items as Acme Steps ([T+1, ...] fields)."""
  signature = client.server_info()[table].signature
  return [tree.unflatten_as(signature, list(sample.data))
          for sample in client.sample(table, num_samples=num_samples,
                                      emit_timesteps=False)]


def _log_softmax(logits):
  return logits - np.log(np.sum(np.exp(logits), -1, keepdims=True))


def test_trajectories_hold_the_behaviour_log_probabilities(setup):
  agent, client, _, _, initial = setup
  export = agent.export_policy()
  for variable, value in zip(export.variables, initial):
    variable.assign(value)
  for step in _trajectories(client, replay.CALIBRATION_TABLE, 8):
    observations, actions = step.observation, step.action
    assert observations.shape == (UNROLL + 1, 84, 84, 4)
    assert observations.dtype == np.uint8
    # Rows whose next row starts an episode are the adder's zero padding.
    taken = ~np.asarray(step.start_of_episode[1:])
    log_probs = _log_softmax(export(observations).numpy())
    expected = log_probs[np.arange(UNROLL + 1), actions][:-1][taken]
    np.testing.assert_allclose(step.extras['log_prob'][:-1][taken],
                               expected, atol=1e-4)
    # Acted before any update.
    assert np.all(step.extras['policy_step'] == 0)


def test_consecutive_trajectories_share_their_boundary_step():
  environment = envs.make_environment(GAME, 1, training=True)
  agent = a2c.AGENT_CLASS(specs.make_environment_spec(environment),
                          a2c.config_for_env(GAME, unroll_length=UNROLL))
  server = reverb.Server(agent.replay_tables(), port=None)
  client = reverb.Client(f'localhost:{server.port}')
  adder = agent.make_adder(client)
  rng = np.random.default_rng(0)
  behave = agent.behaviour(1.0, rng, lambda: 7)
  timestep = environment.reset()
  adder.add_first(timestep)
  taken = []
  for _ in range(3 * UNROLL + 1):
    action, extras = behave(rng.normal(size=4))
    taken.append((action, extras['log_prob']))
    timestep = environment.step(action)
    adder.add(action, timestep, extras)
    if timestep.last():
      timestep = environment.reset()
      adder.add_first(timestep)
  items = _trajectories(client, replay.REPLAY_TABLE, 3)  # Queue order.
  server.stop()
  for first, second in zip(items, items[1:]):
    np.testing.assert_array_equal(first.observation[-1],
                                  second.observation[0])
  actions = np.concatenate([items[0].action[:-1], items[1].action[:-1]])
  np.testing.assert_array_equal(actions, [a for a, _ in taken[:2 * UNROLL]])
  np.testing.assert_allclose(items[0].extras['log_prob'][:-1],
                             [p for _, p in taken[:UNROLL]])
  assert np.all(items[0].extras['policy_step'][:-1] == 7)


def test_quantizer_gets_frames_from_the_calibration_table(setup):
  agent, client, _, _, _ = setup
  frames = agent.calibration_observations(client, 100)
  assert frames.shape[1] == 84 * 84 * 4 and len(frames) >= 100
  assert frames.dtype == np.float32 and frames.max() <= 255
  assert agent.calibration_observations(client, 100_000) is None


def test_learner_consumes_each_trajectory_once_and_logs_the_lag(setup):
  agent, client, bundle, logger, initial = setup
  steps = TRAJECTORIES // agent.config.batch_size
  for _ in range(steps):
    bundle.learner.step()
  info = client.server_info()[replay.REPLAY_TABLE]
  assert info.current_size == 0
  rows = logger.rows
  assert len(rows) == steps and all(np.isfinite(r['loss']) for r in rows)
  # Everything was played by the step-0 policy: update k lags k steps.
  assert [float(row['policy_lag']) for row in rows] == list(range(steps))
  assert all(0.0 < float(row['entropy']) <= np.log(4) + 1e-5 for row in rows)
  after = bundle.learner.get_variables(['policy', interface.LEARNER_STEP])
  assert int(after[1][0]) == steps
  assert any(not np.array_equal(a, b) for a, b in zip(after[0], initial))


def test_export_is_the_learners_logits_network(setup):
  agent, client, bundle, _, _ = setup
  export = export_with_learner_weights(agent, bundle)
  frames = agent.calibration_observations(client, 32)[:32]
  logits, _ = bundle.networks[0](frames.reshape(-1, 84, 84, 4))
  # The quantizer's flat float input and the actor's uint8 frames agree.
  np.testing.assert_allclose(export(frames).numpy(), logits.numpy(),
                             atol=1e-5)
  pixels = tf.constant(frames.reshape(-1, 84, 84, 4).astype(np.uint8))
  np.testing.assert_allclose(export(pixels).numpy(), logits.numpy(),
                             atol=1e-5)


def test_gst_and_prune_see_the_torso_layers(setup):
  names = [layer.name for layer in setup[2].compressible_layers]
  assert names == ['conv_1', 'conv_2', 'linear_3']


def test_behaviour_samples_the_policy_and_stamps_its_step():
  logits = np.array([0.0, 1.0, 2.0, -1.0], np.float32)
  probabilities = np.exp(_log_softmax(logits.astype(np.float64)))
  behave = exploration.categorical_behaviour(np.random.default_rng(0),
                                             lambda: 3)
  draws = [behave(logits) for _ in range(4000)]
  counts = np.bincount([a for a, _ in draws], minlength=4) / len(draws)
  np.testing.assert_allclose(counts, probabilities, atol=0.03)
  action, extras = draws[0]
  assert extras['log_prob'] == pytest.approx(np.log(probabilities[action]))
  assert extras['policy_step'] == 3


def _targets(learner, rewards, discounts, valid, values, log_rhos):
  """The learner's targets for [T, B=1] columns given as lists."""
  column = lambda x: tf.constant(np.asarray(x, np.float32)[:, None])
  batch = learning.Batch(
      observations=None, actions=None, rewards=column(rewards),
      discounts=column(discounts), valid=column(valid),
      behaviour_log_probs=None, policy_steps=None)
  targets = learner._targets(column(values), column(log_rhos), batch)  # pylint: disable=protected-access
  return targets.returns.numpy()[:, 0], targets.advantages.numpy()[:, 0]


def test_on_policy_targets_are_n_step_returns(setup):
  """rho = 1: V-trace is A2C's n-step return, bootstrapped at the end; a
  game over (discount 0) cuts it, and the adder's padding row (valid 0)
  returns its own value."""
  learner, gamma = setup[2].learner, setup[0].config.discount
  rewards = [1.0, 0.0, 0.0, 1.0, 0.0]
  discounts = [1.0, 0.0, 1.0, 1.0, 1.0]  # Step 1 ends its game.
  valid = [1.0, 1.0, 0.0, 1.0, 1.0]  # Step 2 is padding; 3 starts anew.
  values = [0.5, 0.4, 0.3, 0.2, 0.1, 0.7]
  returns, advantages = _targets(learner, rewards, discounts, valid,
                                 values, [0.0] * 5)
  tail = 0.0 + gamma * 0.7
  expected = [1.0 + gamma * 0.0, 0.0, 0.3, 1.0 + gamma * tail, tail]
  np.testing.assert_allclose(returns, expected, rtol=1e-6)
  np.testing.assert_allclose(advantages, np.subtract(expected, values[:-1]),
                             rtol=1e-5, atol=1e-7)


def test_stale_actions_are_weighted_by_the_truncated_ratio(setup):
  """An action the learner now finds e^2 times less likely than the actor
  did counts with weight e^-2; one it finds more likely is capped at 1."""
  learner, gamma = setup[2].learner, setup[0].config.discount
  values = [0.0, 0.0, 0.5]
  kwargs = dict(rewards=[0.0, 1.0], discounts=[1.0, 1.0], valid=[1.0, 1.0],
                values=values)
  _, on_policy = _targets(learner, log_rhos=[0.0, 0.0], **kwargs)
  _, stale = _targets(learner, log_rhos=[3.0, -2.0], **kwargs)
  np.testing.assert_allclose(on_policy[1], 1.0 + gamma * 0.5, rtol=1e-6)
  np.testing.assert_allclose(stale[1], np.exp(-2.0) * on_policy[1],
                             rtol=1e-5)
  # Step 0's own ratio is capped at 1; its target sees step 1's cut trace.
  vs_1 = np.exp(-2.0) * (1.0 + gamma * 0.5)
  np.testing.assert_allclose(stale[0], gamma * vs_1, rtol=1e-5)

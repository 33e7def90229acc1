"""TD3 learner on a fixed batch, and the agent against a real Reverb server."""
import copy

import numpy as np
import pytest
import reverb
import sonnet as snt
import tensorflow as tf
from acme import specs
from acme import types

from agents import compiled
from agents import interface
from agents.replay import CALIBRATION_TABLE
from agents.replay import REPLAY_TABLE
from agents.td3 import AGENT_CLASS
from agents.td3 import config_for_env
from agents.td3 import networks
from agents.td3.learning import TD3Learner
from quarl import compression
from quarl import envs
from replay_helpers import export_with_learner_weights
from replay_helpers import RecordingLogger
from replay_helpers import serve_replay

BATCH = 32
SPEC = specs.EnvironmentSpec(
    observations=specs.Array((5,), np.float32),
    actions=specs.BoundedArray((2,), np.float32, -2.0, 2.0),
    rewards=specs.Array((), np.float32),
    discounts=specs.BoundedArray((), np.float32, 0.0, 1.0))
SMALL = dict(policy_layers=(16, 16), critic_layers=(16, 16))


def fixed_batches():
  """One ReplaySample-shaped batch, served forever."""
  rng = np.random.default_rng(0)
  floats = lambda *shape: rng.normal(size=(BATCH,) + shape).astype(np.float32)
  transition = types.Transition(
      observation=floats(5), action=np.clip(floats(2), -2, 2),
      reward=floats(), discount=np.ones(BATCH, np.float32),
      next_observation=floats(5))
  info = reverb.SampleInfo(*[tf.zeros(BATCH, dtype)
                             for dtype in reverb.SampleInfo.tf_dtypes()])
  sample = reverb.ReplaySample(info=info, data=transition)
  return iter(tf.data.Dataset.from_tensors(sample).repeat())


def make_learner(**kwargs):
  tf.random.set_seed(0)
  agent = AGENT_CLASS(SPEC, config_for_env('test', **SMALL))
  policy = agent.learner_policy()
  critics = (agent.make_critic_network(), agent.make_critic_network())
  learner = TD3Learner(
      policy, critics, copy.deepcopy(policy), copy.deepcopy(critics),
      SPEC.actions, fixed_batches(), **kwargs)
  return learner, policy, critics


def values(module):
  return [v.numpy().copy() for v in module.trainable_variables]


def changed(before, module):
  return any(not np.array_equal(b, v.numpy())
             for b, v in zip(before, module.trainable_variables))


def test_critic_loss_falls_on_a_fixed_batch():
  logger = RecordingLogger()
  learner, _, _ = make_learner(
      logger=logger, critic_optimizer=snt.optimizers.Adam(3e-3),
      report_every_s=0.0)
  for _ in range(100):
    learner.step()
  losses = [float(row['critic_loss']) for row in logger.rows]
  assert learner.num_steps == 100
  assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
  assert all(set(row) >= {'critic_loss', 'policy_loss'} for row in logger.rows)


def test_policy_and_targets_update_every_second_step():
  learner, policy, critics = make_learner(tau=0.005)
  state = learner.state
  targets = [state['target_policy'], state['target_critic1'],
             state['target_critic2']]
  for _ in range(2):
    policy_before, critic_before = values(policy), values(critics[0])
    targets_before = [values(t) for t in targets]
    learner.step()  # Odd step: critics only.
    assert changed(critic_before, critics[0])
    assert not changed(policy_before, policy)
    assert not any(changed(b, t) for b, t in zip(targets_before, targets))
    learner.step()  # Even step: policy, then Polyak targets.
    assert changed(policy_before, policy)
    for online, target, before in zip([policy, *critics], targets,
                                      targets_before):
      for source, moved, old in zip(online.trainable_variables,
                                    target.trainable_variables, before):
        np.testing.assert_allclose(
            moved.numpy(), 0.005 * source.numpy() + 0.995 * old, atol=1e-6)


def test_constraint_runs_inside_every_compiled_step():
  calls = tf.Variable(0)
  learner, _, _ = make_learner()
  learner.constrain = lambda: calls.assign_add(1)
  for _ in range(5):
    learner.step()
  assert int(calls.numpy()) == 5  # Traced once, run every step.


def test_gst_controller_keeps_layers_circulant():
  learner, policy, critics = make_learner()
  layers = networks.compressible_layers(policy, *critics)
  assert len(layers) == 3  # One hidden->hidden layer per network.
  controller = compression.make_controller('gst', layers, block_size=4,
                                           end_step=10_000)
  learner.constrain = controller.constrain
  for step in range(1, 21):
    learner.step()
    controller.sync(step)
  assert controller.report()['compressed_cr'] >= 0.75
  for layer in layers:
    assert layer.compression_ratio() >= 0.75
    kernel = layer.w.numpy()
    layer.apply_constraint()  # Already projected after the last step.
    np.testing.assert_allclose(layer.w.numpy(), kernel, atol=1e-6)


def test_state_checkpoint_resumes_the_learner(tmp_path):
  learner, policy, _ = make_learner()
  for _ in range(3):
    learner.step()
  path = tf.train.Checkpoint(**learner.state).save(str(tmp_path / 'td3'))
  resumed, resumed_policy, _ = make_learner()
  # Adam moments restore on the first update (created lazily).
  status = tf.train.Checkpoint(**resumed.state).restore(path)
  status.assert_existing_objects_matched()
  assert resumed.num_steps == 3
  for a, b in zip(values(policy), values(resumed_policy)):
    np.testing.assert_array_equal(a, b)


def test_default_exploration_is_the_papers():
  agent = AGENT_CLASS(SPEC, config_for_env('gym:HalfCheetah-v4'))
  assert agent.exploration(0, 1) == pytest.approx(0.2)  # 0.1 * max action.
  sigmas = [agent.exploration(i, 4) for i in range(4)]
  assert sigmas == sorted(sigmas, reverse=True)


@pytest.fixture(scope='module')
def replay():
  environment = envs.make_environment('gym:Pendulum-v1', 0)
  spec = specs.make_environment_spec(environment)
  agent = AGENT_CLASS(spec, config_for_env(
      'gym:Pendulum-v1', batch_size=16, min_replay_size=32,
      samples_per_insert=None, **SMALL))
  behave = agent.behaviour(agent.exploration(0, 1), np.random.default_rng(0),
                           interface.unknown_model_step)
  server, client = serve_replay(agent, environment, 200,
                                lambda: behave(np.zeros(1, np.float32)))
  yield agent, client
  server.stop()


def test_transitions_reach_both_tables(replay):
  _, client = replay
  info = client.server_info()
  assert info[REPLAY_TABLE].current_size > 150
  assert info[CALIBRATION_TABLE].current_size > 150


def test_learner_from_reverb_exports_its_online_policy(replay):
  agent, client = replay
  bundle = agent.make_learner(client, None, RecordingLogger())
  for _ in range(4):
    bundle.learner.step()
  export = export_with_learner_weights(agent, bundle)
  observations = tf.random.normal((8, agent.observation_size))
  policy = bundle.networks[0]
  np.testing.assert_allclose(
      agent.model_postprocess(export(observations).numpy()),
      policy(observations), rtol=1e-6, atol=1e-6)  # float32 rounding
  assert len(bundle.compressible_layers) == 3
  assert {'target_policy', 'target_critic1', 'target_critic2',
          'critic_optimizer', 'num_steps'} <= set(bundle.checkpointables)


def test_a_loss_that_turns_non_finite_stops_the_learner():
  learner, _, _ = make_learner(report_every_s=0.0)
  learner.step()  # Reported: TD3's policy loss is NaN until its first step.
  learner.step()
  not_yet = {'unlearned_loss': np.float32(np.nan)}
  learner._check_finite(not_yet, {})  # pylint: disable=protected-access
  with pytest.raises(compiled.NonFiniteLossError, match='critic_loss'):
    learner._check_finite({'critic_loss': np.float32(np.inf)}, {})  # pylint: disable=protected-access

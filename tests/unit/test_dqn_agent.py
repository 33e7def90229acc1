"""DQN agent pieces against a real in-process Reverb server on CartPole."""
import numpy as np
import pytest
import tensorflow as tf
from acme import specs

from agents import interface
from agents import replay
from agents.dqn import AGENT_CLASS
from agents.dqn import config_for_env
from agents.dqn.agent import REPLAY_TABLE
from quarl.quantization.calibration import rollout_observations
from quarl import actors
from quarl import envs
from quarl import quantization
from replay_helpers import serve_replay

ENV = 'gym:CartPole-v1'
TRAIN_STEPS = 1000  # A few seconds of learning on random-policy data.
# int8 may flip the greedy action only where the two Q-values nearly tie.
MIN_ARGMAX_AGREEMENT = 0.9


@pytest.fixture(scope='module')
def setup():
    environment = envs.make_environment(ENV, 0)
    spec = specs.make_environment_spec(environment)
    agent = AGENT_CLASS(spec, config_for_env(
        ENV, batch_size=32, min_replay_size=100, samples_per_insert=None))
    rng = np.random.default_rng(0)
    server, client = serve_replay(agent, environment, 1000,
                                  lambda: np.int32(rng.integers(2)))
    bundle = agent.make_learner(client, None, None)
    yield agent, client, environment, bundle
    server.stop()


@pytest.fixture(scope='module')
def trained(setup):
    agent, _, _, bundle = setup
    for _ in range(TRAIN_STEPS):
        bundle.learner.step()
    export = agent.export_policy()
    for variable, value in zip(export.variables,
                               bundle.learner.get_variables(['policy'])[0]):
        variable.assign(value)
    return export


def test_presets_and_flag_overrides():
    assert config_for_env(ENV).q_layers == (256, 256)
    paper = config_for_env(ENV, preset='paper', batch_size=32)
    assert paper.q_layers == (2048, 2048, 2048) and paper.batch_size == 32


def test_each_actor_gets_its_own_epsilon(setup):
    agent = setup[0]
    epsilons = [agent.exploration(i, 4) for i in range(4)]
    assert epsilons[0] == pytest.approx(0.4)
    assert len(set(epsilons)) == 4
    assert epsilons == sorted(epsilons, reverse=True)
    assert agent.exploration(0, 1) == pytest.approx(0.4)


def test_transitions_reach_both_tables(setup):
    _, client, _, _ = setup
    info = client.server_info()
    assert info[REPLAY_TABLE].current_size > 900
    assert info[replay.CALIBRATION_TABLE].current_size > 900


def test_learner_updates_priorities(setup, trained):
    del trained  # Only its training matters here.
    _, client, _, _ = setup
    samples = list(client.sample(REPLAY_TABLE, num_samples=200,
                                 emit_timesteps=False))
    priorities = {float(s.info.priority) for s in samples}
    assert priorities != {1.0}  # Insert priority 1, then |TD error|.


def test_exported_variables_match_the_learner(setup, tmp_path):
    agent, _, _, bundle = setup
    weights = bundle.learner.get_variables(['policy'])[0]
    export = agent.export_policy()
    assert [w.shape for w in weights] == [v.shape for v in export.variables]
    assert len(bundle.compressible_layers) == 1  # 256 -> 256 only.
    assert {'network', 'target_network', 'optimizer'} <= set(
        bundle.checkpointables)
    assert tf.train.Checkpoint(**bundle.checkpointables).save(
        str(tmp_path / 'learner'))


def test_int8_keeps_the_greedy_action(setup, trained):
    agent, _, environment, _ = setup
    observations = rollout_observations(environment, 400,
                                        np.random.default_rng(1))
    calibration, held = observations[:256], observations[256:]
    model = quantization.convert_policy(trained, trained.variables,
                                        agent.observation_size, 'int8',
                                        calibration, held)
    assert 1.0 - model.argmax_mismatch >= MIN_ARGMAX_AGREEMENT, model
    runner = actors.LiteRTPolicy(model.model_bytes)
    greedy = agent.behaviour(0.0, np.random.default_rng(0),
                             interface.unknown_model_step)
    q_values = trained(held).numpy()
    agreement = np.mean([greedy(runner(o)) == np.argmax(q)
                         for o, q in zip(held, q_values)])
    assert agreement >= MIN_ARGMAX_AGREEMENT


def test_tf_actor_is_greedy_at_epsilon_zero(setup, trained):
    agent, _, environment, bundle = setup
    actor = agent.make_tf_actor(bundle.learner, None, 0.0,
                                np.random.default_rng(0))
    observations = rollout_observations(environment, 50,
                                        np.random.default_rng(2))
    q_values = trained(observations).numpy()
    decisive = np.abs(q_values[:, 0] - q_values[:, 1]) > 1e-4
    actions = np.array([actor.select_action(o) for o in observations])
    np.testing.assert_array_equal(actions[decisive],
                                  np.argmax(q_values, -1)[decisive])

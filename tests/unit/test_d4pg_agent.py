"""D4PG agent pieces against a real in-process Reverb server."""
import numpy as np
import pytest
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks

from agents import replay
from agents.d4pg import AGENT_CLASS
from agents.d4pg import config_for_env
from quarl import envs
from quarl import quantization
from launch.config import RunConfig
from launch.nodes.quantizer import QuantizerNode
from quarl.quantization.calibration import rollout_observations
from replay_helpers import export_with_learner_weights
from replay_helpers import serve_replay


@pytest.fixture(scope='module')
def setup():
    # Int8 fidelity depends on the initial weights: over 16 initialisations
    # of this policy the mean error ran from 0.004 to 0.022 of the range, and
    # an unseeded CI run once drew 0.053. A fixed init makes the bar a check
    # of the pipeline, not of the draw.
    tf.random.set_seed(0)
    environment = envs.make_environment('gym:Pendulum-v1', 0)
    spec = specs.make_environment_spec(environment)
    agent = AGENT_CLASS(spec, config_for_env(
        'gym:Pendulum-v1', batch_size=16, min_replay_size=32,
        samples_per_insert=None, policy_layers=(32, 32, 32),
        critic_layers=(32, 32)))
    rng = np.random.default_rng(0)
    server, client = serve_replay(
        agent, environment, 200,
        lambda: rng.uniform(-2, 2, (1,)).astype(np.float32))
    yield agent, client, environment
    server.stop()


def test_value_range_follows_the_task():
    assert (config_for_env('gym:Pendulum-v1').vmin,
            config_for_env('gym:Pendulum-v1').vmax) == (-1500.0, 0.0)
    assert config_for_env('dm_control:walker:walk').vmax == 150.0
    assert config_for_env('gym:Pendulum-v1', vmin=-10.0).vmin == -10.0


def test_transitions_reach_both_tables(setup):
    _, client, _ = setup
    info = client.server_info()
    assert info['priority_table'].current_size > 150
    assert info[replay.CALIBRATION_TABLE].current_size > 150


def test_calibration_draws_pendulum_observations(setup):
    """Pendulum's observation is (cos, sin, angular velocity): rows of
    anything else from the packed items (actions, rewards) would not lie on
    the unit circle."""
    agent, client, _ = setup
    observations = agent.calibration_observations(client, 64)
    assert observations.shape == (64, 3) and observations.dtype == np.float32
    np.testing.assert_allclose(np.hypot(observations[:, 0], observations[:, 1]),
                               1.0, atol=1e-5)
    assert np.ptp(observations[:, 2]) > 0


def test_learner_steps_and_exports_an_int8_policy(setup):
    agent, client, environment = setup
    bundle = agent.make_learner(client, None, None)
    for _ in range(3):
        bundle.learner.step()
    export = export_with_learner_weights(agent, bundle)
    observations = rollout_observations(environment, 100,
                                        np.random.default_rng(1))
    # A trained policy's actions span the range; the freshly initialised head
    # outputs ~0 everywhere, which any precision reproduces.
    head = next(m for m in export.submodules
                if isinstance(m, acme_networks.NearZeroInitializedLinear))
    # Standardise the pre-tanh output: scaling w alone keeps any offset, which
    # can leave every action pinned at one bound.
    pre_tanh = export(tf.constant(observations)).numpy()
    head.w.assign(head.w / pre_tanh.std())
    head.b.assign((head.b - pre_tanh.mean(axis=0)) / pre_tanh.std())
    actions = agent.model_postprocess(
        export(tf.constant(observations)).numpy())
    assert actions.std() > 0.5 and np.ptp(actions) > 2.0
    model = quantization.convert_policy(
        export, export.variables, agent.observation_size, 'int8',
        observations[:80], observations[80:],
        postprocess=agent.model_postprocess,
        output_scale=agent.model_output_scale())
    # Of the action range [-2, 2]; a 32-wide LayerNorm policy calibrated on
    # 80 observations (a 3x256 one: p95 ~0.03, benchmarks/squash_fidelity).
    assert model.mean_rel_err < 0.05 and model.p95_rel_err < 0.12
    assert len(bundle.compressible_layers) == 3  # 2 policy + 1 critic.


def test_quantizer_holds_out_observations_the_calibrator_never_saw(
        setup, tmp_path):
    agent, _, environment = setup
    rng = np.random.default_rng(3)
    server, client = serve_replay(
        agent, environment, 1000,
        lambda: rng.uniform(-2, 2, (1,)).astype(np.float32))
    config = RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                       actor_precision='int8', num_actors=1,
                       run_dir=str(tmp_path))
    node = QuantizerNode(None, client, None, config)
    fallback = np.zeros((320, agent.observation_size), np.float32)
    calibration, held, source = node._calibration(fallback)
    server.stop()
    assert source == 'replay'
    assert len(calibration) >= 200 and len(held) >= 64
    seen = {row.tobytes() for row in calibration}
    assert not any(row.tobytes() in seen for row in held)


def test_authors_regime_never_throttles_and_retires_items(setup):
    agent, _, environment = setup
    free = AGENT_CLASS(agent.environment_spec, config_for_env(
        'gym:Pendulum-v1', batch_size=16, min_replay_size=32,
        samples_per_insert=None, max_times_sampled=2,
        policy_layers=(32, 32, 32), critic_layers=(32, 32)))
    rng = np.random.default_rng(4)
    # 300 inserts with nobody sampling: a replay ratio would have blocked
    # the adder after ~min_replay_size; MinSize never does.
    server, client = serve_replay(
        free, environment, 300,
        lambda: rng.uniform(-2, 2, (1,)).astype(np.float32))
    size = lambda: client.server_info()[replay.REPLAY_TABLE].current_size
    inserted = size()
    assert inserted >= 290
    draw = lambda n: list(client.sample(replay.REPLAY_TABLE, num_samples=n,
                                        emit_timesteps=False))
    # As many uniform draws as items: about 1 - 2/e of them are drawn twice
    # and leave (each draw retires at most half an item, so the table stays
    # far above min_replay_size, where MinSize would block sampling).
    assert len(draw(inserted)) == inserted
    assert size() < inserted - 30
    server.stop()

"""The environment layer: names, specs, episode ends, seeding, quietness."""
import os
import pathlib
import subprocess
import sys
import textwrap

import acme
import dm_env
import numpy as np
import pytest
from acme import specs
from acme.utils import loggers

from quarl.envs import EnvironmentNameError
from quarl.envs import action_kind
from quarl.envs import make_environment
from quarl.envs import random_action
from quarl.envs import validate_environment_name

ROOT = pathlib.Path(os.path.abspath(__file__)).parents[2]


@pytest.fixture
def make():
    """make_environment, closing every environment the test built."""
    built = []

    def _make(name, seed=0):
        built.append(make_environment(name, seed))
        return built[-1]

    yield _make
    for environment in built:
        environment.close()


def _run_episode(environment, action):
    timesteps = [environment.reset()]
    while not timesteps[-1].last():
        timesteps.append(environment.step(action))
    return timesteps


def _check_step_dtypes(environment, action):
    environment.reset()
    timestep = environment.step(action)
    assert timestep.observation.dtype == np.float32
    assert timestep.reward.dtype == np.float32
    assert timestep.discount.dtype == np.float32


@pytest.mark.parametrize('name, obs_size, action_size', [
    ('dm_control:cartpole:balance', 5, 1),
    ('dm_control:walker:walk', 24, 6),
])
def test_dm_control_specs_are_flat_float32(make, name, obs_size, action_size):
    environment = make(name)
    spec = specs.make_environment_spec(environment)
    assert spec.observations.shape == (obs_size,)
    assert spec.observations.dtype == np.float32
    assert isinstance(spec.actions, specs.BoundedArray)
    assert spec.actions.shape == (action_size,)
    assert spec.actions.dtype == np.float32
    assert spec.rewards.dtype == spec.discounts.dtype == np.float32
    _check_step_dtypes(environment, np.zeros(action_size, np.float32))


def test_gym_box_actions_are_bounded_float32(make):
    spec = specs.make_environment_spec(make('gym:Pendulum-v1'))
    assert spec.observations.shape == (3,)
    assert spec.observations.dtype == np.float32
    assert isinstance(spec.actions, specs.BoundedArray)
    assert spec.actions.shape == (1,)
    assert spec.actions.dtype == np.float32
    np.testing.assert_array_equal(spec.actions.minimum, [-2.0])
    np.testing.assert_array_equal(spec.actions.maximum, [2.0])


def test_gym_discrete_actions_are_int32_discrete(make):
    environment = make('gym:CartPole-v1')
    spec = specs.make_environment_spec(environment)
    assert isinstance(spec.actions, specs.DiscreteArray)
    assert spec.actions.num_values == 2
    assert spec.actions.dtype == np.int32
    assert spec.observations.shape == (4,)
    _check_step_dtypes(environment, np.int32(1))


@pytest.mark.parametrize('env_id, kind', [
    ('CartPole-v1', 'discrete'),
    ('MountainCar-v0', 'discrete'),
    ('Acrobot-v1', 'discrete'),
    ('Pendulum-v1', 'continuous'),
    ('MountainCarContinuous-v0', 'continuous'),
    ('HalfCheetah-v4', 'continuous'),
    ('Humanoid-v4', 'continuous'),
])
def test_supported_gym_environments_step(make, env_id, kind):
    environment = make(f'gym:{env_id}')
    assert action_kind(environment) == kind
    spec = specs.make_environment_spec(environment)
    action = spec.actions.generate_value()
    environment.reset()
    for _ in range(5):
        timestep = environment.step(action)
        assert timestep.observation.shape == spec.observations.shape
        assert timestep.observation.dtype == np.float32


@pytest.mark.parametrize('env_id, obs_size, action_size', [
    ('Hopper-v5', 11, 3),
    ('Walker2d-v5', 17, 6),
    ('HalfCheetah-v5', 17, 6),
    ('Ant-v5', 105, 8),
    ('Humanoid-v5', 348, 17),
])
def test_gymnasium_mujoco_v5_environments_step(make, env_id, obs_size,
                                               action_size):
    environment = make(f'gymnasium:{env_id}')
    spec = specs.make_environment_spec(environment)
    assert spec.observations.shape == (obs_size,)
    assert isinstance(spec.actions, specs.BoundedArray)
    assert spec.actions.shape == (action_size,)
    _check_step_dtypes(environment, spec.actions.generate_value())


def test_gymnasium_hopper_falls_with_discount_zero(make):
    """Hopper's unhealthy states terminate; pushing hard topples it."""
    environment = make('gymnasium:Hopper-v5')
    timesteps = _run_episode(environment, np.ones(3, np.float32))
    assert len(timesteps) < 1001
    assert timesteps[-1].discount == 0.0


def test_time_limit_is_truncation_with_discount_one(make):
    timesteps = _run_episode(make('gym:Pendulum-v1'), np.zeros(1, np.float32))
    assert len(timesteps) == 201  # restart + the 200-step TimeLimit
    assert timesteps[-1].step_type == dm_env.StepType.LAST
    assert timesteps[-1].discount == 1.0
    assert all(t.discount == 1.0 for t in timesteps[1:-1])


def test_failure_is_termination_with_discount_zero(make):
    timesteps = _run_episode(make('gym:CartPole-v1'), np.int32(0))
    assert len(timesteps) < 100  # pushing left always topples the pole
    assert timesteps[-1].step_type == dm_env.StepType.LAST
    assert timesteps[-1].discount == 0.0


def test_step_after_last_starts_a_new_episode(make):
    environment = make('gym:CartPole-v1')
    _run_episode(environment, np.int32(0))
    assert environment.step(np.int32(0)).first()


def _first_observations(environment, episodes=2):
    """The first observation of each of `episodes` consecutive episodes."""
    firsts = []
    for _ in range(episodes):
        firsts.append(environment.reset().observation)
    return np.stack(firsts)


@pytest.mark.parametrize('name', [
    'gym:Pendulum-v1',
    'gymnasium:Hopper-v5',
    'dm_control:cartpole:balance',
])
def test_seed_fixes_the_run(make, name):
    run = _first_observations(make(name, seed=3))
    np.testing.assert_array_equal(run, _first_observations(make(name, seed=3)))
    assert not np.array_equal(run, _first_observations(make(name, seed=4)))
    # Later episodes are not replays of the first.
    assert not np.array_equal(run[0], run[1])


def test_environment_loop_runs_an_episode(make):
    environment = make('gym:Pendulum-v1')
    spec = specs.make_environment_spec(environment)

    class ZeroActor(acme.Actor):
        """Always pushes with zero torque."""

        def select_action(self, observation):
            return np.zeros(spec.actions.shape, spec.actions.dtype)

        def observe_first(self, timestep):
            pass

        def observe(self, action, next_timestep):
            pass

        def update(self, wait=False):
            pass

    loop = acme.EnvironmentLoop(environment, ZeroActor(),
                                logger=loggers.NoOpLogger())
    result = loop.run_episode()
    assert result['episode_length'] == 200


def test_action_kind_accepts_specs(make):
    assert action_kind(specs.make_environment_spec(
        make('gym:CartPole-v1'))) == 'discrete'
    assert action_kind(specs.make_environment_spec(
        make('dm_control:cartpole:balance'))) == 'continuous'
    with pytest.raises(TypeError):
        action_kind('gym:CartPole-v1')


@pytest.mark.parametrize('name', [
    'gym:CartPole-v1',
    'gym:HalfCheetah-v4',
    'gymnasium:Walker2d-v5',
    'dm_control:walker:walk',
])
def test_known_names_validate(name):
    validate_environment_name(name)


@pytest.mark.parametrize('name, suggestion', [
    ('gym:Pendulm-v1', 'gym:Pendulum-v1'),
    ('dm_control:cartpol:balance', 'dm_control:cartpole:balance'),
    ('dm_control:cartpole', 'dm_control:cartpole:balance'),
    ('openai:Pendulum-v1', 'gym:Pendulum-v1'),
    ('gymnasium:Hoper-v5', 'gymnasium:Hopper-v5'),
    ('atari:Pong', 'ale:Pong'),
    ('dm_control:nothing_like_it', None),
])
def test_unknown_names_explain_themselves(name, suggestion):
    with pytest.raises(EnvironmentNameError) as raised:
        validate_environment_name(name)
    message = str(raised.value)
    assert '\n' not in message
    assert repr(name) in message
    assert 'dm_control:DOMAIN:TASK' in message and 'gym:ID' in message
    assert 'gymnasium:ID' in message
    _, _, suggested = message.partition('; did you mean: ')
    if suggestion is None:
        assert not suggested
    else:
        assert suggestion in suggested.split(', ')
    assert isinstance(raised.value, ValueError)


def test_make_environment_rejects_unknown_names():
    with pytest.raises(EnvironmentNameError):
        make_environment('gym:Pendulm-v1')


def test_building_environments_prints_nothing(tmp_path):
    # A fresh interpreter, since gym prints its banner only on first import;
    # MuJoCo's default handler would also drop MUJOCO_LOG.TXT into the cwd.
    code = textwrap.dedent('''
        import numpy as np
        from quarl.envs import make_environment
        for name in ('gym:HalfCheetah-v4', 'gymnasium:Hopper-v5',
                     'dm_control:cheetah:run', 'ale:Breakout'):
            environment = make_environment(name)
            spec = environment.action_spec()
            environment.reset()
            environment.step(np.zeros(spec.shape, spec.dtype))
            environment.close()
    ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get('PYTHONPATH', '').split(
            os.pathsep) if p]))
    proc = subprocess.run([sys.executable, '-c', code], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '' and proc.stderr == ''
    assert not list(tmp_path.iterdir())


def test_random_action_is_valid_for_both_kinds():
    import numpy as np
    from acme import specs
    rng = np.random.default_rng(0)
    discrete = specs.DiscreteArray(3, dtype=np.int32)
    assert {int(random_action(discrete, rng)) for _ in range(200)} == {0, 1, 2}
    box = specs.BoundedArray((2,), np.float32, -2.0, 1.0)
    actions = np.stack([random_action(box, rng) for _ in range(200)])
    assert actions.dtype == np.float32 and actions.shape == (200, 2)
    assert actions.min() >= -2.0 and actions.max() <= 1.0

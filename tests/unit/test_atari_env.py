"""Atari through the env layer: specs, frame skip and pooling, no-op starts,
life loss in training only, time limit, names."""
import os
import pathlib
import subprocess
import sys

import ale_py
import dm_env
import numpy as np
import pytest
from acme import specs
from ale_py import roms

from quarl.envs import EnvironmentNameError
from quarl.envs import action_kind
from quarl.envs import atari_env
from quarl.envs import make_environment
from quarl.envs import validate_environment_name

ROOT = pathlib.Path(os.path.abspath(__file__)).parents[2]
FIRE = 1  # Breakout's minimal action set: NOOP, FIRE, RIGHT, LEFT.


def test_breakout_specs_and_steps():
  environment = make_environment('ale:Breakout', 0)
  assert action_kind(environment) == 'discrete'
  spec = specs.make_environment_spec(environment)
  assert spec.observations.shape == (84, 84, 4)
  assert spec.observations.dtype == np.uint8
  assert spec.actions.num_values == 4 and spec.actions.dtype == np.int32
  first = environment.reset()
  assert first.first() and first.observation.shape == (84, 84, 4)
  assert first.observation.dtype == np.uint8
  # The stack starts as zeros, the newest frame last.
  assert not first.observation[..., :3].any()
  assert first.observation[..., 3].any()
  timestep = environment.step(np.int32(FIRE))
  assert timestep.mid() and timestep.observation.dtype == np.uint8
  assert timestep.reward.dtype == timestep.discount.dtype == np.float32
  np.testing.assert_array_equal(timestep.observation[..., 2],
                                first.observation[..., 3])


def test_frame_skip_max_pools_the_last_two_frames():
  """Each step equals 4 raw ALE frames, the max of the last two shrunk."""
  environment = atari_env.AtariEnvironment('Breakout', 7, noop_max=0)
  reference = ale_py.ALEInterface()
  reference.setInt('random_seed', 7)
  reference.setFloat('repeat_action_probability', 0.0)
  reference.loadROM(roms.get_rom_path('breakout'))
  reference.reset_game()
  actions = reference.getMinimalActionSet()
  environment.reset()
  pooling_mattered = False
  for step in range(40):
    action = FIRE if step % 10 == 0 else step % 4
    reward, screens = 0.0, []
    for _ in range(atari_env.FRAME_SKIP):
      reward += reference.act(actions[action])
      screens.append(reference.getScreenGrayscale())
    timestep = environment.step(np.int32(action))
    expected = atari_env.downsample(np.maximum(screens[-2], screens[-1]))
    np.testing.assert_array_equal(timestep.observation[..., -1], expected)
    assert timestep.reward == reward
    pooling_mattered |= not np.array_equal(
        expected, atari_env.downsample(screens[-1]))
  assert pooling_mattered  # The moving ball shows in both pooled frames.


def _episode_probes(environment, episodes=3, steps=20):
  """The frame stack `steps` no-op steps into each of `episodes` resets: it
  depends on how many no-op frames started the game."""
  probes = []
  for _ in range(episodes):
    environment.reset()
    for _ in range(steps):
      timestep = environment.step(np.int32(0))
    probes.append(timestep.observation)
  return np.stack(probes)


def test_noop_starts_are_seeded_and_repeatable():
  run = _episode_probes(make_environment('ale:Pong', 3))
  np.testing.assert_array_equal(
      run, _episode_probes(make_environment('ale:Pong', 3)))
  assert not np.array_equal(run, _episode_probes(make_environment('ale:Pong',
                                                                  4)))
  assert not np.array_equal(run[0], run[1])
  fixed = _episode_probes(
      atari_env.AtariEnvironment('Pong', 3, noop_max=0), episodes=2)
  np.testing.assert_array_equal(fixed[0], fixed[1])


def _always_fire_episode(environment):
  timesteps = [environment.reset()]
  while not timesteps[-1].last():
    timesteps.append(environment.step(np.int32(FIRE)))
  return timesteps


def test_life_loss_ends_training_episodes_only():
  evaluation = _always_fire_episode(make_environment('ale:Breakout', 5))
  assert [t.discount for t in evaluation[1:]].count(0.0) == 1
  training_environment = make_environment('ale:Breakout', 5, training=True)
  training = [_always_fire_episode(training_environment) for _ in range(5)]
  for episode in training:
    assert episode[-1].discount == 0.0
    assert not episode[0].observation[..., :3].any()
  # The five lives of one game, played on: the same frames as the full game.
  assert sum(len(e) - 1 for e in training) == len(evaluation) - 1
  np.testing.assert_array_equal(training[-1][-1].observation,
                                evaluation[-1].observation)
  assert sum(float(t.reward) for e in training for t in e[1:]) == sum(
      float(t.reward) for t in evaluation[1:])


def test_time_limit_truncates_with_discount_one():
  environment = atari_env.AtariEnvironment('Breakout', 0, noop_max=0,
                                           max_episode_frames=100)
  environment.reset()
  steps = 0
  while True:
    timestep = environment.step(np.int32(0))  # Never serves: no life lost.
    steps += 1
    if timestep.last():
      break
  assert steps == 25 and timestep.discount == 1.0
  assert environment.step(np.int32(0)).step_type == dm_env.StepType.FIRST


def test_unknown_game_names_close_matches():
  validate_environment_name('ale:SpaceInvaders')
  with pytest.raises(EnvironmentNameError) as raised:
    validate_environment_name('ale:Breakot')
  message = str(raised.value)
  assert isinstance(raised.value, ValueError) and '\n' not in message
  assert 'ale:GAME' in message
  assert 'ale:Breakout' in message.partition('; did you mean: ')[2].split(
      ', ')


def test_train_cli_rejects_unknown_game_with_exit_2(tmp_path):
  run_dir = tmp_path / 'run'
  result = subprocess.run(
      [sys.executable, '-m', 'launch.train', f'--run_dir={run_dir}',
       '--env=ale:Breakot'], capture_output=True, text=True, timeout=120,
      cwd=str(ROOT), env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
  assert result.returncode == 2, result.stderr
  error_lines = [l for l in result.stderr.splitlines()
                 if l.startswith('train: error:')]
  assert len(error_lines) == 1, result.stderr
  assert 'did you mean: ale:Breakout' in error_lines[0]
  assert not run_dir.exists()

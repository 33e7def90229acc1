"""The out-of-process environment protocol (pipe_server.py and
RemoteEnvironment), on a stand-in run by this same Python."""
import os
import sys

import numpy as np
import pytest

from quarl import envs
from quarl.envs import remote_env
import pipe_standin

STANDIN = dict(python=sys.executable, factory='pipe_standin:make',
               extra_env={'PYTHONPATH': os.path.dirname(__file__)})


def _remote(**kwargs):
  return remote_env.RemoteEnvironment(kwargs=kwargs, **STANDIN)


def test_episodes_match_the_environment_run_in_process():
  remote, local = _remote(seed=5), pipe_standin.make(seed=5)
  try:
    assert remote.observation_spec().shape == (115,)
    assert remote.action_spec().num_values == 19
    first = remote.reset()
    assert first.first()
    np.testing.assert_array_equal(first.observation, local.reset())
    actions = [3, 0, 18] * 7  # Two episode ends in 21 steps.
    ends = 0
    for action in actions:
      step = remote.step(action)
      if step.first():  # The step after an end resets, as dm_env asks.
        np.testing.assert_array_equal(step.observation, local.reset())
        continue
      observation, reward, done, _ = local.step(action)
      np.testing.assert_array_equal(step.observation, observation)
      assert step.observation.dtype == np.float32
      assert step.reward == reward
      assert step.last() == done
      ends += step.last()
      assert step.discount == (0.0 if done else 1.0)  # done: terminated.
    assert ends == 2
  finally:
    remote.close()


def test_what_the_environment_prints_does_not_break_the_stream(capfd):
  remote = _remote(chatty=True)
  try:
    remote.reset()
    for _ in range(3):
      assert remote.step(3).reward == 1.0
  finally:
    remote.close()
  assert 'printed on stdout' in capfd.readouterr().err


def test_an_exception_in_the_environment_is_one_line_and_the_server_lives():
  remote = _remote(raise_at_step=2)
  try:
    remote.reset()
    remote.step(0)
    with pytest.raises(remote_env.EnvironmentServerError,
                       match='RuntimeError: the stand-in engine failed'):
      remote.step(0)
    assert not remote.step(0).first()  # Still serving.
  finally:
    remote.close()


def test_a_dead_environment_process_is_an_error_not_a_wait():
  remote = _remote(exit_at_step=2)
  remote.reset()
  remote.step(0)
  with pytest.raises(remote_env.EnvironmentServerError,
                     match=r'the environment process ended \(exit code 3\)'):
    remote.step(0)
  with pytest.raises(remote_env.EnvironmentServerError, match='is gone'):
    remote.step(0)
  remote.close()


def test_a_hung_environment_is_killed_at_the_deadline():
  remote = remote_env.RemoteEnvironment(
      kwargs=dict(hang_at_step=1), step_timeout_s=2.0, **STANDIN)
  remote.reset()
  with pytest.raises(remote_env.EnvironmentServerError,
                     match='no answer from the environment process in 2 s'):
    remote.step(0)
  assert remote._process.poll() is not None  # pylint: disable=protected-access


def test_a_factory_that_fails_to_build_is_one_line():
  with pytest.raises(remote_env.EnvironmentServerError,
                     match="ModuleNotFoundError: No module named 'nowhere'"):
    remote_env.RemoteEnvironment(sys.executable, 'nowhere:make', {})


def test_close_ends_the_process():
  remote = _remote()
  remote.reset()
  remote.close()
  assert remote._process.returncode == 0  # pylint: disable=protected-access
  with pytest.raises(remote_env.EnvironmentServerError, match='is gone'):
    remote.step(0)


def test_football_without_its_engine_says_how_to_install_it(monkeypatch):
  monkeypatch.setenv('QUARL_FOOTBALL_PYTHON', '/nonexistent/python3.11')
  with pytest.raises(envs.EnvironmentBuildError, match='run `make football`'):
    envs.make_environment('football:academy_empty_goal_close', 0)
  with pytest.raises(envs.EnvironmentNameError, match='academy_corner'):
    envs.validate_environment_name('football:academy_coner')

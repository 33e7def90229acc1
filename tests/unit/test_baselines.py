"""Reference returns: bounded episodes, measured once per run and kept in
run_dir/baselines.json for its summary and every resume."""
import dataclasses
import json
import time

import dm_env
import numpy as np
import pytest

from launch.runtime import baselines
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import runner
from launch.runtime import supervisor
from launch.config import RunConfig
from quarl import carbon


class _Endless(dm_env.Environment):
  """A game that never ends (Breakout, never served), one point a step."""

  def __init__(self):
    self.resets = 0

  def reset(self):
    self.resets += 1
    return dm_env.restart(np.zeros(1, np.float32))

  def step(self, action):
    return dm_env.transition(1.0, np.zeros(1, np.float32))

  def observation_spec(self):
    return None

  def action_spec(self):
    return None


def test_episodes_end_at_the_step_cap_and_the_deadline(monkeypatch):
  monkeypatch.setattr(baselines, 'MAX_EPISODE_STEPS', 50)
  environment = _Endless()
  far = time.time() + 60
  assert baselines._mean_return(environment, lambda: 0, 3, far) == 50  # pylint: disable=protected-access
  assert environment.resets == 3
  # Past the deadline: one episode, cut at once, and no further one.
  environment = _Endless()
  assert baselines._mean_return(environment, lambda: 0, 3, time.time()) == 0  # pylint: disable=protected-access
  assert environment.resets == 1


@pytest.fixture(name='measured')
def _measured(monkeypatch):
  """Replaces the measuring; lists the (env, episodes, seed) measured."""
  calls = []

  def measure(env_name, episodes, seed):
    calls.append((env_name, episodes, seed))
    return (('random', -1000.0 - seed), ('zero_action', -1200.0))

  monkeypatch.setattr(baselines, '_measure', measure)
  return calls


def test_stored_per_env_seed_and_episodes(tmp_path, measured):
  run_dir = str(tmp_path)
  assert baselines.stored(run_dir, 'gym:Pendulum-v1', 0) is None
  first = baselines.for_run(run_dir, 'gym:Pendulum-v1', 0)
  assert baselines.for_run(run_dir, 'gym:Pendulum-v1', 0) == first
  assert baselines.stored(run_dir, 'gym:Pendulum-v1', 0) == first
  assert len(measured) == 1
  # Another seed or episode count is another measurement.
  assert baselines.stored(run_dir, 'gym:Pendulum-v1', 1) is None
  assert baselines.stored(run_dir, 'gym:Pendulum-v1', 0, episodes=5) is None
  assert baselines.for_run(run_dir, 'gym:Pendulum-v1', 1)['random'] == -1001
  assert json.loads((tmp_path / run_dir_lib.BASELINES_JSON).read_text())[
      'seed'] == 1


def test_real_measurement_is_printed_and_cached_in_process(capsys):
  first = baselines.baseline_returns('gym:Pendulum-v1', episodes=1, seed=3)
  assert 'measuring reference returns (random, zero-action) for ' \
         'gym:Pendulum-v1' in capsys.readouterr().out
  again = baselines.baseline_returns('gym:Pendulum-v1', episodes=1, seed=3)
  assert again == first and capsys.readouterr().out == ''
  assert first['random'] < 0 and first['zero_action'] < 0


def _burn_cpu(seconds):
  end = time.process_time() + seconds
  while time.process_time() < end:
    pass


def test_resumed_run_reuses_baselines_and_sums_energy(tmp_path, measured,
                                                       monkeypatch):
  """Two segments of one run (the second a --resume), their launches
  stubbed: the baselines are measured once, and the summary's energy, CO2
  and launcher CPU cover both segments."""

  def launch(config):
    del config
    _burn_cpu(0.5)
    return supervisor.Outcome('interrupted', {}, {})

  monkeypatch.setattr(runner, '_launch_and_wait', launch)
  config = RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                     actor_precision='int8', num_actors=1,
                     run_dir=str(tmp_path), start_time=time.time())
  first, _ = runner.run(config, show_progress=False)
  resumed, _ = runner.run(dataclasses.replace(config, resume=True),
                          show_progress=False)
  assert len(measured) == 1
  assert first['baseline_returns'] == resumed['baseline_returns'] == {
      'random': -1000.0, 'zero_action': -1200.0}

  segments = carbon.read_segments(str(tmp_path))
  assert len(segments) == resumed['segments'] == 2
  assert resumed['energy_kwh'] == pytest.approx(
      sum(s.totals[1] for s in segments))
  assert resumed['co2_kg'] == pytest.approx(
      sum(s.totals[2] for s in segments))
  assert resumed['energy_kwh'] > first['energy_kwh'] > 0
  assert (resumed['node_cpu_seconds']['launcher'] >
          first['node_cpu_seconds']['launcher'] + 0.4)

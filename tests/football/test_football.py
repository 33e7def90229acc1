"""Google Research Football on the real engine (`make test-football`): the
environment family and short A2C and PPO programs with int8 actors."""
import os
import sys

import numpy as np
import pytest

from quarl import envs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'integration'))
from conftest import rows  # pylint: disable=g-import-not-at-top,wrong-import-position
from conftest import train_and_check_contract  # pylint: disable=g-import-not-at-top,wrong-import-position

SCENARIO = 'football:academy_empty_goal_close'


def _play(environment, actions):
  """Observations and rewards of `actions`, resetting after each end."""
  observations, rewards, ends = [environment.reset().observation], [], 0
  for action in actions:
    step = environment.step(action)
    observations.append(step.observation)
    if step.reward is not None:
      rewards.append(float(step.reward))
    ends += step.last()
  return np.array(observations), rewards, ends


def test_scenarios_are_simple115v2_vectors_with_19_actions():
  environment = envs.make_environment(SCENARIO, 0)
  try:
    assert environment.observation_spec().shape == (115,)
    assert environment.action_spec().num_values == 19
    assert envs.observation_kind(environment) == 'vector'
    _, rewards, ends = _play(environment, [5] * 800)  # 5: run right.
    assert ends >= 1
    assert set(rewards) <= {-1.0, 0.0, 1.0}
  finally:
    environment.close()


def test_a_seed_repeats_the_run_and_another_seed_differs():
  actions = np.random.default_rng(0).integers(19, size=300)
  runs = []
  for _ in range(2):
    environment = envs.make_environment(SCENARIO, 7)
    try:
      runs.append(_play(environment, actions)[0])
    finally:
      environment.close()
  np.testing.assert_array_equal(runs[0], runs[1])
  other = envs.make_environment(SCENARIO, 8)
  try:
    assert not np.array_equal(_play(other, actions)[0], runs[0])
  finally:
    other.close()


def test_each_episode_of_a_run_draws_new_engine_randomness():
  """gfootball alone replays its first episode's engine seed every episode;
  football_engine reseeds at each reset."""
  environment = envs.make_environment(SCENARIO, 7)
  try:
    episodes = []
    for _ in range(2):
      observations = [environment.reset().observation]
      for _ in range(20):  # Running right: no goal in 20 steps.
        observations.append(environment.step(5).observation)
      episodes.append(np.array(observations))
    assert not np.array_equal(episodes[0], episodes[1])
  finally:
    environment.close()


@pytest.mark.parametrize('agent', ['a2c', 'ppo'])
def test_int8_program_runs_on_football(tmp_path, agent):
  run_dir = tmp_path / 'run'
  summary = train_and_check_contract(
      run_dir, f'--agent={agent}', f'--env={SCENARIO}',
      '--actor_precision=int8', '--num_actors=1', '--max_actor_steps=3000',
      '--max_seconds=600', '--publish_period=5s', '--eval_episodes=1',
      '--seed=0', timeout=900)
  assert summary['learner_steps'] > 0 and summary['actor_steps'] >= 3000
  publishes = [row for row in rows(run_dir / 'quantizer.csv')
               if row['status'] == 'published']
  assert {row['precision'] for row in publishes} == {'int8'}
  assert any(row['calibration_source'] == 'replay' for row in publishes)
  evaluations = rows(run_dir / 'evaluator.csv')
  assert evaluations and all(
      -1 <= float(row['episode_return']) <= 1 for row in evaluations)

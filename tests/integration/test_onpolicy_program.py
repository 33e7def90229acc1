"""A real local_mp A2C program on Atari Breakout with int8 LiteRT actors."""
from conftest import rows
from conftest import train_and_check_contract


def test_int8_a2c_runs_on_breakout(tmp_path):
  run_dir = tmp_path / 'run'
  summary = train_and_check_contract(
      run_dir, '--agent=a2c', '--env=ale:Breakout', '--actor_precision=int8',
      '--num_actors=1', '--max_seconds=120', '--publish_period=5s',
      '--eval_episodes=1', '--seed=0')
  assert summary['agent'] == 'a2c'
  evaluations = rows(run_dir / 'evaluator.csv')
  assert summary['learner_steps'] > 0 and summary['actor_steps'] > 0, (
      evaluations)
  assert evaluations and all(
      float(row['episode_return']) >= 0 for row in evaluations)

  publishes = [row for row in rows(run_dir / 'quantizer.csv')
               if row['status'] == 'published']
  assert len(publishes) >= 2
  assert {row['precision'] for row in publishes} == {'int8'}
  # Calibrated on the actors' own frames once they have queued enough.
  assert any(row['calibration_source'] == 'replay' for row in publishes)

  # The learner logs how many of its steps behind the acting model was.
  learner_rows = rows(run_dir / 'logs' / 'learner' / 'logs.csv')
  lags = [float(row['policy_lag']) for row in learner_rows]
  assert lags and all(lag >= 0 for lag in lags), lags

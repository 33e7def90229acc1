"""Issue 14's command: a D4PG int8 run on cartpole:swingup at seed 1.

It died at publish 5-6 every time (LiteRT aborted in the quantizer on a
saturated policy's model); now it runs through its budget.
"""
from conftest import rows
from conftest import train_and_check_contract


def test_int8_cartpole_swingup_seed_1_runs_past_the_old_crash(tmp_path):
  run_dir = tmp_path / 'run'
  summary = train_and_check_contract(
      run_dir, '--agent=d4pg', '--env=dm_control:cartpole:swingup',
      '--actor_precision=int8', '--num_actors=2', '--max_seconds=90',
      '--seed=1')
  assert summary['publishes'] >= 8, summary
  publishes = rows(run_dir / 'quantizer.csv')
  assert all(row['status'] == 'published' or
             row['status'].startswith('refused: ') for row in publishes)
  published = [row for row in publishes if row['status'] == 'published']
  assert all(0.0 <= float(row['p95_rel_err']) <= 0.1 for row in published)
  assert max(int(row['policy_version'])
             for row in rows(run_dir / 'actors.csv')) >= 6

"""benchmarks/learning_curves: the table of recorded runs over seeds."""
import json

from benchmarks import learning_curves


def _record(root, arm, seed, rows):
  path = root / 'Breakout' / arm / f'seed_{seed}'
  path.mkdir(parents=True)
  (path / 'summary.json').write_text(json.dumps({'status': 'completed'}))
  (path / 'evaluator.csv').write_text('actor_steps,episode_return\n' + ''.join(
      f'{steps},{value}\n' for steps, value in rows))


def test_table_is_the_latest_evaluation_per_budget_over_seeds(tmp_path):
  _record(tmp_path, 'sb3', 0, [(1000, 2.0), (2100, 8.0)])
  _record(tmp_path, 'sb3', 1, [(900, 4.0), (1900, 12.0)])
  _record(tmp_path, 'ours', 0, [(1100, 1.0), (2000, 3.0)])
  unfinished = tmp_path / 'Breakout' / 'ours' / 'seed_1'
  unfinished.mkdir()  # No summary: not counted.
  found = learning_curves.curves(str(tmp_path), 'Breakout',
                                 ['sb3', 'ours'])
  assert sorted(found) == ['ours', 'sb3'] and list(found['ours']) == ['0']
  lines = learning_curves.table(found, 2000, 1000).splitlines()
  assert lines[0] == '| env steps | sb3 (seeds 0, 1) | ours (seeds 0) |'
  # At 1,000 steps: sb3 seed 0 has 2, seed 1 has 4; ours nothing yet.
  assert lines[2] == '| 1,000 | 3.00 [2.0, 4.0] | n/a |'
  assert lines[3] == '| 2,000 | 7.00 [2.0, 12.0] | 3.00 [3.0, 3.0] |'
  assert lines[4] == ('| last 5 evaluations | 6.50 [5.0, 8.0] | '
                      '2.00 [2.0, 2.0] |')


"""benchmarks/learning_curves: the table of recorded runs over seeds."""
import json

from benchmarks import learning_curves


def _record(root, arm, seed, header, rows):
  path = root / 'Breakout' / arm / f'seed_{seed}'
  path.mkdir(parents=True)
  (path / 'summary.json').write_text(json.dumps({'status': 'completed'}))
  (path / 'evaluator.csv').write_text(header + '\n' + ''.join(
      ','.join(map(str, row)) + '\n' for row in rows))


def test_table_is_the_evaluation_at_each_trained_budget_over_seeds(tmp_path):
  _record(tmp_path, 'sb3', 0, 'actor_steps,episode_return',
          [(1000, 2.0), (2000, 8.0), (3000, 6.0)])
  _record(tmp_path, 'sb3', 1, 'actor_steps,episode_return',
          [(1000, 4.0), (2000, 12.0), (3000, 10.0)])
  # Ours: actors run ahead of the learner, whose steps (100 env steps each
  # here) place the row. The row at learner step 0 is before any training,
  # and 21 is a resumed run's extra evaluation.
  _record(tmp_path, 'ours', 0,
          'actor_steps,learner_steps,episode_return',
          [(150, 0, 1.0), (1400, 10, 3.0), (2500, 21, 5.0), (3400, 31, 7.0)])
  unfinished = tmp_path / 'Breakout' / 'ours' / 'seed_1'
  unfinished.mkdir()  # No summary: not counted.
  found = learning_curves.curves(str(tmp_path), 'Breakout',
                                 ['sb3', 'ours'], env_steps_per_update=100)
  assert sorted(found) == ['ours', 'sb3'] and list(found['ours']) == ['0']
  lines = learning_curves.table(found, 3000, 1000).splitlines()
  assert lines[0] == '| env steps | sb3 (seeds 0, 1) | ours (seeds 0) |'
  assert lines[2] == '| 1,000 | 3.00 [2.0, 4.0] | 3.00 [3.0, 3.0] |'
  # Ours' nearest evaluation to 2,000 is the resumed run's at 2,100.
  assert lines[3] == '| 2,000 | 10.00 [8.0, 12.0] | 5.00 [5.0, 5.0] |'
  assert lines[4] == '| 3,000 | 8.00 [6.0, 10.0] | 7.00 [7.0, 7.0] |'
  # Each seed's mean over the same 3 rows, then over seeds.
  assert lines[5] == ('| mean of the last 3 rows | 7.00 [5.3, 8.7] | '
                      '5.00 [5.0, 5.0] |')


def test_no_evaluation_within_half_an_interval_is_no_value():
  assert learning_curves.at([(1000.0, 2.0)], 2000, 1000) is None
  assert learning_curves.at([(1550.0, 2.0), (2100.0, 4.0)], 2000,
                            1000) == 4.0

r"""Start-up of a whole program: forked nodes against fresh interpreters.

Runs the same launch.train program with --node_start=fork and =exec,
alternating, `--repeats` times each, and reads each run's startup.csv: when
the last node's main loop began (its first event), when the learner's compile ended, and the
first actor and learner steps (seconds after launch). Default program: D4PG
Pendulum int8 in ActorQ's regime (4 free-running actors, max_times_sampled
16, batch 256, the learner pinned), the regime map's shape. Prints a
markdown table per run, the medians, and `first learner step exec/fork: R`.

  python -m benchmarks.startup [--repeats=2 --seconds=60]
"""
import os
import statistics
import subprocess
import sys

from absl import app
from absl import flags

from launch.runtime import run_dir as run_dir_lib

_REPEATS = flags.DEFINE_integer('repeats', 2, 'Runs of each start mode.')
_SECONDS = flags.DEFINE_float('seconds', 60.0, 'Budget of each run.')
_OUT = flags.DEFINE_string('out_dir', 'runs/startup', 'Run directories.')
_TRAIN = flags.DEFINE_list(
    'train_args', ['--agent=d4pg', '--env=gym:Pendulum-v1',
                   '--actor_precision=int8', '--num_actors=4',
                   '--d4pg.max_times_sampled=16', '--d4pg.batch_size=256',
                   '--pin_cpus'],
    'launch.train flags of the program.')

MODES = ('fork', 'exec')
COLUMNS = ('main loops', 'learner compiled', 'first actor step',
           'first learner step')


def startup_times(run_dir: str) -> dict:
  """Seconds after launch of each column's event, from startup.csv."""
  rows = run_dir_lib.read_csv(os.path.join(run_dir, run_dir_lib.STARTUP_CSV))

  def when(node_prefix, event):
    times = [float(r['wall_time_s']) for r in rows if r['event'] == event
             and r['node'].startswith(node_prefix)]
    return min(times) if times else float('nan')

  first_event = {}  # node -> its first event: its main loop has begun.
  for row in rows:
    first_event[row['node']] = min(first_event.get(row['node'], float('inf')),
                                   float(row['wall_time_s']))
  return {'main loops': max(first_event.values()),
          'learner compiled': when('learner', 'compiled'),
          'first actor step': when('actor', 'first_step'),
          'first learner step': when('learner', 'first_step')}


def main(argv):
  del argv
  measured = {mode: [] for mode in MODES}
  print('| start | run | ' + ' | '.join(f'{c} (s)' for c in COLUMNS) + ' |')
  print('|---|---|' + '---|' * len(COLUMNS))
  for repeat in range(_REPEATS.value):
    for mode in MODES:
      run_dir = os.path.join(_OUT.value, f'{mode}_{repeat}')
      subprocess.run(
          [sys.executable, '-m', 'launch.train', *_TRAIN.value,
           f'--max_seconds={_SECONDS.value}', f'--node_start={mode}',
           f'--run_dir={run_dir}', '--overwrite'],
          check=True, capture_output=True)
      times = startup_times(run_dir)
      measured[mode].append(times)
      print(f'| {mode} | {repeat} | ' +
            ' | '.join(f'{times[c]:.1f}' for c in COLUMNS) + ' |', flush=True)
  medians = {mode: {c: statistics.median(t[c] for t in measured[mode])
                    for c in COLUMNS} for mode in MODES}
  print(f'\nMedians over {_REPEATS.value} runs each '
        f'({" ".join(_TRAIN.value)}):\n')
  print('| start | ' + ' | '.join(f'{c} (s)' for c in COLUMNS) + ' |')
  print('|---|' + '---|' * len(COLUMNS))
  for mode in MODES:
    print(f'| {mode} | ' + ' | '.join(f'{medians[mode][c]:.1f}'
                                      for c in COLUMNS) + ' |')
  print('first learner step exec/fork: '
        f'{medians["exec"]["first learner step"] / medians["fork"]["first learner step"]:.2f}')


if __name__ == '__main__':
  app.run(main)

r"""ActorQ reproduction: time-to-reward speedup and CO2 ratio per precision.

For each task, runs every actor precision with the same seed and budget,
one after another, then writes results.md, results.csv and PNG plots.

  python -m launch.reproduce_actorq --out_dir=runs/actorq          # small set
  python -m launch.reproduce_actorq --full --preset=paper --max_seconds=1800

Target rule (stated in results.md): a task's target return is
random + 0.9 * (best - random), where best is the best evaluation return any
precision reached in that comparison and random the random-policy return.
"""
import csv
import os
import sys

from absl import app
from absl import flags

from launch import analysis
from launch import summary as summary_lib
from launch import sweep
from launch.config import ACTOR_PRECISIONS

SMALL_TASKS = ('d4pg:gym:Pendulum-v1', 'dqn:gym:CartPole-v1')
PAPER_TASKS = (
    'd4pg:dm_control:cartpole:balance', 'd4pg:dm_control:walker:stand',
    'd4pg:dm_control:walker:walk', 'd4pg:dm_control:cheetah:run',
    'd4pg:dm_control:hopper:stand', 'd4pg:dm_control:reacher:hard',
    'd4pg:dm_control:finger:spin', 'd4pg:dm_control:humanoid:stand',
    'd4pg:dm_control:humanoid:walk', 'd4pg:gym:Pendulum-v1',
    'd4pg:gym:MountainCarContinuous-v0', 'd4pg:gym:HalfCheetah-v4',
    'dqn:gym:CartPole-v1', 'dqn:gym:MountainCar-v0', 'dqn:gym:Acrobot-v1')

_OUT = flags.DEFINE_string('out_dir', 'runs/reproduce_actorq',
                           'Where runs, results and plots go.')
_TASKS = flags.DEFINE_list('tasks', list(SMALL_TASKS), 'AGENT:ENV entries.')
_FULL = flags.DEFINE_bool('full', False, "The paper's task list.")
_PRECISIONS = flags.DEFINE_list('precisions', ['fp32_tf', 'fp32', 'fp16',
                                               'int8'], 'Actor precisions.')
_MAX_SECONDS = flags.DEFINE_float('max_seconds', 120.0, 'Budget per run.')
_NUM_ACTORS = flags.DEFINE_integer('num_actors', 2, 'Actors per run.')
_SEED = flags.DEFINE_integer('seed', 0, 'Same seed for every precision.')
_PRESET = flags.DEFINE_string('preset', 'small', 'small or paper.')
_FRACTION = flags.DEFINE_float('target_fraction', 0.9,
                               'Target = random + f * (best - random).')
_EXTRA = flags.DEFINE_list('train_args', [],
                           'Extra launch.train flags, e.g. --publish_period=2s')

BASELINE = 'fp32_tf'
FIELDS = ('task', 'precision', 'target_return', 'time_to_target_s',
          'speedup_vs_fp32_tf', 'speedup_vs_fp32', 'final_return',
          'best_return', 'co2_to_target_kg', 'co2_to_target_ratio_vs_fp32_tf',
          'energy_kwh', 'co2_kg', 'co2_ratio_vs_fp32_tf',
          'actor_steps_per_s', 'actor_time_split', 'model_bytes', 'status')


def _run_dir(out_dir, task, precision):
  return os.path.join(out_dir, 'runs', task.replace(':', '_'), precision)


def _load_summary(run_dir):
  return analysis.load_json_if_exists(os.path.join(run_dir, 'summary.json'))


def _split_text(split) -> str:
  """'env/inference/adder/refresh' percentages, e.g. '12/3/84/1'."""
  if not split:
    return 'n/a'
  return '/'.join(f"{100 * split[key]:.0f}"
                  for key in ('env', 'inference', 'adder', 'refresh'))


def compare_task(out_dir, task, precisions, fraction):
  """Rows (one per precision) comparing a task's runs, plus the target."""
  runs = {p: (_load_summary(_run_dir(out_dir, task, p)),
              analysis.load_curve(_run_dir(out_dir, task, p)))
          for p in precisions}
  done = {p: (s, c) for p, (s, c) in runs.items() if s and c}
  if not done:
    return [], None, {}
  best = max(r for _, curve in done.values() for _, r in curve)
  floor = min(s['baseline_returns']['random'] for s, _ in done.values()
              if s.get('baseline_returns'))
  target = analysis.target_return(best, floor, fraction)
  times = {p: analysis.time_to_target(c, target) for p, (_, c) in done.items()}
  co2 = {p: s.get('co2_kg') for p, (s, _) in done.items()}
  co2_to_target = {p: analysis.emissions_at(
      _run_dir(out_dir, task, p), times[p])[1] for p in done}
  rows = []
  for precision, (summary, _) in done.items():
    rows.append(dict(
        task=task, precision=precision, target_return=target,
        time_to_target_s=times[precision],
        speedup_vs_fp32_tf=analysis.ratio(times.get(BASELINE),
                                          times[precision]),
        speedup_vs_fp32=analysis.ratio(times.get('fp32'), times[precision]),
        final_return=summary['final_return'],
        best_return=summary['best_return'],
        co2_to_target_kg=co2_to_target[precision],
        co2_to_target_ratio_vs_fp32_tf=analysis.ratio(
            co2_to_target.get(BASELINE), co2_to_target[precision]),
        energy_kwh=summary.get('energy_kwh'), co2_kg=co2[precision],
        co2_ratio_vs_fp32_tf=analysis.ratio(co2.get(BASELINE),
                                            co2[precision]),
        actor_steps_per_s=summary['actor_steps_per_s'],
        actor_time_split=_split_text(summary_lib.actor_time_split(
            summary_lib.latest_actor_rows(_run_dir(out_dir, task, precision)))),
        model_bytes=summary['model_bytes'], status=summary['status']))
  return rows, target, {p: c for p, (_, c) in done.items()}


def write_results(out_dir, tasks, precisions, fraction):
  """results.csv, results.md and plots from whatever runs are on disk."""
  all_rows, speedups, co2_ratios = [], {}, {}
  plots = os.path.join(out_dir, 'plots')
  os.makedirs(plots, exist_ok=True)
  for task in tasks:
    rows, target, curves = compare_task(out_dir, task, precisions, fraction)
    all_rows += rows
    if curves:
      analysis.plot_curves(curves, task, os.path.join(
          plots, f"return_{task.replace(':', '_')}.png"), target)
    speedups[task] = {r['precision']: r['speedup_vs_fp32_tf'] for r in rows}
    co2_ratios[task] = {r['precision']: r['co2_to_target_ratio_vs_fp32_tf']
                        for r in rows}
  analysis.plot_bars(speedups, f'time-to-target speedup vs {BASELINE}',
                     'ActorQ speedup', os.path.join(plots, 'speedup.png'))
  analysis.plot_bars(co2_ratios,
                     f'CO2-to-target ratio ({BASELINE} / precision)',
                     'ActorQ CO2 reduction', os.path.join(plots, 'co2.png'))
  with open(os.path.join(out_dir, 'results.csv'), 'w', newline='') as handle:
    writer = csv.DictWriter(handle, FIELDS)
    writer.writeheader()
    writer.writerows(all_rows)
  table = analysis.markdown_table(
      ('task', 'precision', 'target', 'time to target (s)',
       'speedup vs fp32_tf', 'speedup vs fp32 TFLite', 'final return',
       'best return', 'CO2 to target kg', 'CO2-to-target ratio vs fp32_tf',
       'energy kWh (run)', 'CO2 kg (run)', 'CO2 ratio (run) vs fp32_tf',
       'actor steps/s', 'actor time env/inference/adder/refresh %',
       'model bytes'),
      [(r['task'], r['precision'], analysis.fmt(r['target_return'], 4),
        analysis.fmt(r['time_to_target_s'], 4, 'not reached'),
        analysis.fmt(r['speedup_vs_fp32_tf']),
        analysis.fmt(r['speedup_vs_fp32']),
        analysis.fmt(r['final_return'], 4), analysis.fmt(r['best_return'], 4),
        analysis.fmt(r['co2_to_target_kg'], 3, 'not reached'),
        analysis.fmt(r['co2_to_target_ratio_vs_fp32_tf']),
        analysis.fmt(r['energy_kwh']), analysis.fmt(r['co2_kg']),
        analysis.fmt(r['co2_ratio_vs_fp32_tf']),
        analysis.fmt(r['actor_steps_per_s'], 4), r['actor_time_split'],
        r['model_bytes'] or '-')
       for r in all_rows])
  with open(os.path.join(out_dir, 'results.md'), 'w') as handle:
    handle.write(
        '# ActorQ reproduction\n\n'
        f'Command: `{" ".join(sys.argv)}`\n\n'
        f'Target rule: target = random + {fraction} x (best - random), where '
        'best is the best evaluation return any precision reached on that '
        'task and random is the random-policy return. Time to target is the '
        'first evaluation at or above it; "not reached" if none. Speedups '
        'and CO2 ratios are baseline / precision (higher is better). CO2 to '
        'target is the emissions codecarbon had counted by the time to target '
        '(interpolated between its cumulative rows); "(run)" columns cover '
        'the whole fixed budget, so they compare equal-length runs. The '
        'actor time split shows what bounds a run: a large adder share means '
        'actors wait on the replay rate limiter (learner-bound); large env or '
        'inference shares mean actor-bound.\n\n'
        f'{table}\n\nPlots: `plots/`.\n')
  return all_rows


def main(argv):
  del argv
  tasks = PAPER_TASKS if _FULL.value else tuple(_TASKS.value)
  for precision in _PRECISIONS.value:
    if precision not in ACTOR_PRECISIONS:
      sys.exit(f'reproduce_actorq: unknown precision {precision!r}')
  commands, run_dirs = [], []
  for task in tasks:
    agent, env = task.split(':', 1)
    for precision in _PRECISIONS.value:
      commands.append([f'--agent={agent}', f'--env={env}',
                       f'--actor_precision={precision}',
                       f'--num_actors={_NUM_ACTORS.value}',
                       f'--max_seconds={_MAX_SECONDS.value}',
                       f'--seed={_SEED.value}', f'--preset={_PRESET.value}',
                       *_EXTRA.value])
      run_dirs.append(_run_dir(_OUT.value, task, precision))
  sweep.run_all(commands, run_dirs)
  write_results(_OUT.value, tasks, _PRECISIONS.value, _FRACTION.value)
  with open(os.path.join(_OUT.value, 'results.md')) as handle:
    print(handle.read())


if __name__ == '__main__':
  app.run(main)

r"""ActorQ reproduction: time-to-reward speedup and CO2 ratio per precision.

For each task and seed, runs every actor precision with that seed and the
same budget, one after another, then writes results.md, results.csv and PNG
plots. A task may carry its own budget: AGENT:ENV@SECONDS.

  python -m launch.reproduce_actorq --out_dir=runs/actorq          # small set
  python -m launch.reproduce_actorq --full --preset=paper --max_seconds=1800
  python -m launch.reproduce_actorq --seeds=0,1 \
      --tasks=d4pg:dm_control:cartpole:swingup@240,dqn:gym:CartPole-v1
  python -m launch.reproduce_actorq --regimes=acme,between,authors \
      --num_actors=4 --train_args=--pin_cpus          # the regime map

Regimes (REGIMES) are replay settings every run of the map gets: `acme`,
the agent's own replay ratio (D4PG: 32 samples per insert at batch 64, 2
fresh transitions a learner step); `authors`, ActorQ's code (MinSize, each
transition sampled at most 16 times, batch 256: actors never throttled);
`between`, a replay ratio of 64 at batch 256 (4 fresh a step);
`authors_throttled`, the authors' reuse (16 samples per transition at batch
256) as a replay ratio, so actors wait for the learner instead of flooding
the replay server that feeds it: on a small machine they share its cores.

Target rule (stated in results.md): a task's target return, per seed, is
floor + 0.9 * (best - floor), where best is the best evaluation return any
precision reached in that comparison and floor the better of the random and
zero-action returns: a policy that beats only one of them has learned
nothing (cartpole balance scores ~745 for doing nothing, ~320 at random).
Where fewer than two evaluations of the comparison beat the floor there is
no target: one evaluation above it is a lucky set of games, not learning
(humanoid:stand, seed 0: one of 51 evaluations beat the zero-action return
by 1 of a possible 1,000). The baseline's best alone
is no reference: a baseline seed that never learns (finger:spin, fp32_tf
seed 0: best 3.7 where int8 reached 677) would set a target any flicker
meets.

A run's small files (RESULT_FILES) are copied to --results_dir as it ends
(--commit_results commits each as it lands); runs already there are not run
again and the tables are computed from those files alone, so a map resumes
from a checkout on another machine, and --tables_only rewrites the tables.
"""
import csv
import dataclasses
import itertools
import math
import os
import statistics
import sys
from typing import Any, Dict

from absl import flags

import agents
from agents import AGENT_NAMES
from launch.analysis import runs as analysis
from launch import cli
from launch.analysis import pipeline_model
from launch.runtime import run_dir as run_dir_lib
from launch import settings as launch_settings
from launch.runtime import summary as summary_lib
from launch.runtime import sweep
from launch.config import ACTOR_PRECISIONS
from quarl import envs
from quarl.carbon import segments

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
_SEEDS = flags.DEFINE_list('seeds', ['0'],
                           'Seeds; every precision runs each of them.')
_PRESET = flags.DEFINE_string('preset', 'small', 'small or paper.')
_FRACTION = flags.DEFINE_float('target_fraction', 0.9,
                               'Target = floor + f * (best - floor); floor: '
                               'the better of the random and zero-action '
                               'returns.')
_EXTRA = flags.DEFINE_list('train_args', [],
                           'Extra launch.train flags, e.g. --publish_period=2s')
_RESULTS = flags.DEFINE_string(
    'results_dir', None, "Each finished run's small files, the tables and "
    'plots; default: --out_dir.')
_COMMIT = flags.DEFINE_bool(
    'commit_results', False, "git-commit each finished run's small files in "
    'the repository holding --results_dir, as the run ends.')
_TABLES_ONLY = flags.DEFINE_bool(
    'tables_only', False, 'Run nothing: write the tables from --results_dir.')
cli.require_positive('max_seconds', 'num_actors')
flags.register_validator('target_fraction', lambda f: 0 < f <= 1,
                         'must be in (0, 1]')
flags.register_validator(
    'seeds', lambda seeds: all(s.isdigit() and int(s) <= cli.MAX_SEED
                               for s in seeds),
    f'want comma-separated integers in [0, {cli.MAX_SEED}]')

BASELINE = 'fp32_tf'
# Fewer evaluations above the floor than this: no target (module docstring).
_MIN_EVALUATIONS_ABOVE_FLOOR = 2
# Regime -> the replay agent's settings (each AGENT.FIELD it has).
REGIMES = {
    'acme': {},
    'between': dict(samples_per_insert=64.0, batch_size=256),
    'authors': dict(max_times_sampled=16, batch_size=256),
    'authors_throttled': dict(samples_per_insert=16.0, batch_size=256),
}
_REGIMES = flags.DEFINE_list(
    'regimes', ['acme'], f'Replay regimes, of {", ".join(REGIMES)}: each '
    'task, seed and precision runs in each.')
FIELDS = ('regime', 'task', 'seed', 'precision', 'target_return', 'time_to_target_s',
          'speedup_vs_fp32_tf', 'predicted_speedup_vs_fp32_tf', 'bound',
          'time_to_target_from_first_learner_step_s',
          'learner_steps_to_target', 'actor_steps_to_target',
          'learner_steps', 'actor_steps',
          'speedup_from_first_learner_step_vs_fp32_tf',
          'learner_steps_per_s', 'learner_busy_share',
          'speedup_at_least_vs_fp32_tf', 'speedup_at_most_vs_fp32_tf',
          'speedup_vs_fp32', 'final_return',
          'best_return', 'co2_to_target_kg', 'co2_to_target_ratio_vs_fp32_tf',
          'energy_kwh', 'co2_kg', 'co2_ratio_vs_fp32_tf',
          'final_return_diff_vs_fp32_tf', 'actor_steps_per_s',
          'actor_time_split', 'samples_per_transition', 'fp32_return_gap',
          'model_bytes', 'status')


def regime_settings(regime: str, agent: str) -> Dict[str, Any]:
  """The regime's settings as --AGENT.FIELD flags of `agent`."""
  fields = {f.name for f in dataclasses.fields(agents.config_class(agent))}
  return {f'{agent}.{field}': value
          for field, value in REGIMES[regime].items() if field in fields}


RESULT_FILES = (run_dir_lib.SUMMARY_JSON, run_dir_lib.EVALUATOR_CSV,
                run_dir_lib.CONFIG_JSON, run_dir_lib.ACTORS_CSV,
                run_dir_lib.QUANTIZER_CSV, run_dir_lib.STARTUP_CSV,
                segments.EMISSIONS_FILE)


def _run_dir(out_dir, regime, task, seed, precision):
  return os.path.join(out_dir, 'runs', regime, task.replace(':', '_'),
                      f'seed{seed}', precision)


def parse_task(entry: str):
  """'AGENT:ENV[@SECONDS]' -> (task, budget seconds or None).

  Raises:
    ValueError: an unknown agent or environment, or a budget that is not a
      finite number of seconds > 0; before any of the sweep's runs starts.
  """
  task, _, seconds = entry.partition('@')
  agent, _, env = task.partition(':')
  if agent not in AGENT_NAMES or not env:
    raise ValueError(f'--tasks entry {entry!r}: want AGENT:ENV[@SECONDS], '
                     f'AGENT one of {", ".join(AGENT_NAMES)}')
  envs.validate_environment_name(env)
  try:
    budget = float(seconds) if seconds else None
  except ValueError:
    budget = -1.0
  if budget is not None and not 0 < budget < math.inf:
    raise ValueError(f'--tasks entry {entry!r}: the budget after @ must be '
                     'a finite number of seconds > 0')
  return task, budget


def _load_summary(run_dir):
  return analysis.load_json_if_exists(
      os.path.join(run_dir, run_dir_lib.SUMMARY_JSON))


def _split_text(split) -> str:
  """'env/inference/adder/refresh' percentages, e.g. '12/3/84/1'."""
  if not split:
    return 'n/a'
  return '/'.join(f"{100 * split[key]:.0f}"
                  for key in ('env', 'inference', 'adder', 'refresh'))


def _since_first_learner_step(summary, seconds):
  """Seconds after the run's first learner step (None if either is
  missing): time to target without the start-up both arms share."""
  first = summary.get('time_to_first_learner_step_s')
  return None if seconds is None or first is None else seconds - first


def _learner_steps_per_s(summary):
  """Learner steps per second of stepping (from its first step on)."""
  stepping = pipeline_model.stepping_seconds(summary)
  return (summary['learner_steps'] / stepping
          if stepping and summary.get('learner_steps') else None)


def _speedup_at_least(baseline_summary, baseline_time, time):
  """Where this run reached the target and the baseline run never did:
  the baseline's whole run over this time to target, a lower bound on the
  speedup (None otherwise)."""
  if baseline_summary is None or baseline_time is not None or time is None:
    return None
  wall = baseline_summary.get('wall_s')
  return wall / time if wall else None


def _speedup_at_most(summary, baseline_time, time):
  """Where the baseline reached the target and this run never did: the
  baseline's time to target over this run's whole run, an upper bound on
  the speedup (None otherwise)."""
  if baseline_time is None or time is not None:
    return None
  wall = summary.get('wall_s')
  return baseline_time / wall if wall else None


def _learning_floor(summary) -> float:
  """The better of the run's random-policy and zero-action returns."""
  returns = summary['baseline_returns']
  return max(returns['random'], returns.get('zero_action', returns['random']))


def compare_task(out_dir, regime, task, seed, precisions, fraction):
  """Rows (one per precision) comparing a task's runs at one seed in one
  regime, plus the target."""
  run_dir = lambda p: _run_dir(out_dir, regime, task, seed, p)  # pylint: disable=unnecessary-lambda-assignment
  runs = {p: (_load_summary(run_dir(p)), analysis.load_curve(run_dir(p)))
          for p in precisions}
  done = {p: (s, c) for p, (s, c) in runs.items() if s and c}
  if not done:
    return [], None, {}
  best = max(r for _, curve in done.values() for _, r in curve)
  floor = min(_learning_floor(s) for s, _ in done.values()
              if s.get('baseline_returns'))
  above_floor = sum(r > floor for _, curve in done.values() for _, r in curve)
  target = (analysis.target_return(best, floor, fraction)
            if above_floor >= _MIN_EVALUATIONS_ABOVE_FLOOR else None)
  baseline_final = (done[BASELINE][0]['final_return'] if BASELINE in done
                    else None)
  times = {p: None if target is None else analysis.time_to_target(c, target)
           for p, (_, c) in done.items()}
  stepping_times = {p: _since_first_learner_step(s, times[p])
                    for p, (s, _) in done.items()}
  co2 = {p: s.get('co2_kg') for p, (s, _) in done.items()}
  co2_to_target = {p: analysis.emissions_at(run_dir(p), times[p])[1]
                   for p in done}
  rows = []
  for precision, (summary, _) in done.items():
    learner_steps_to_target, actor_steps_to_target = analysis.steps_at(
        run_dir(precision), times[precision])
    rows.append(dict(
        regime=regime, task=task, seed=seed, precision=precision,
        target_return=target,
        time_to_target_s=times[precision],
        speedup_vs_fp32_tf=analysis.ratio(times.get(BASELINE),
                                          times[precision]),
        speedup_at_least_vs_fp32_tf=_speedup_at_least(
            done[BASELINE][0] if BASELINE in done else None,
            times.get(BASELINE), times[precision]),
        speedup_at_most_vs_fp32_tf=_speedup_at_most(
            summary, times.get(BASELINE), times[precision]),
        speedup_vs_fp32=analysis.ratio(times.get('fp32'), times[precision]),
        predicted_speedup_vs_fp32_tf=pipeline_model.predicted_speedup(
            done[BASELINE][0].get('pipeline') if BASELINE in done else None,
            summary.get('pipeline')),
        bound=(summary.get('pipeline') or {}).get('bound'),
        time_to_target_from_first_learner_step_s=stepping_times[precision],
        learner_steps_to_target=learner_steps_to_target,
        actor_steps_to_target=actor_steps_to_target,
        learner_steps=summary.get('learner_steps'),
        actor_steps=summary.get('actor_steps'),
        speedup_from_first_learner_step_vs_fp32_tf=analysis.ratio(
            stepping_times.get(BASELINE), stepping_times[precision]),
        learner_steps_per_s=_learner_steps_per_s(summary),
        learner_busy_share=pipeline_model.learner_busy_share(summary),
        final_return=summary['final_return'],
        best_return=summary['best_return'],
        # Of the learnable range (best - floor): the "no reward loss" check;
        # none where nothing was learned (no target).
        final_return_diff_vs_fp32_tf=(
            None if baseline_final is None or target is None else
            (summary['final_return'] - baseline_final) / (best - floor)),
        co2_to_target_kg=co2_to_target[precision],
        co2_to_target_ratio_vs_fp32_tf=analysis.ratio(
            co2_to_target.get(BASELINE), co2_to_target[precision]),
        energy_kwh=summary.get('energy_kwh'), co2_kg=co2[precision],
        co2_ratio_vs_fp32_tf=analysis.ratio(co2.get(BASELINE),
                                            co2[precision]),
        actor_steps_per_s=summary['actor_steps_per_s'],
        actor_time_split=_split_text(summary_lib.actor_time_split(
            summary_lib.latest_actor_rows(run_dir(precision)))),
        samples_per_transition=summary.get('realised_samples_per_insert'),
        fp32_return_gap=summary_lib.fp32_return_gap(run_dir_lib.read_csv(
            os.path.join(run_dir(precision), run_dir_lib.EVALUATOR_CSV))),
        model_bytes=summary['model_bytes'], status=summary['status']))
  return rows, target, {p: c for p, (_, c) in done.items()}


def _spread(values, missing: str = 'not reached') -> str:
  """'mean (min to max)' over seeds; None values (runs that never reached
  the target) are counted as `missing`."""
  present = [v for v in values if v is not None]
  if not present:
    return missing
  text = f'{statistics.mean(present):.2f}'
  if len(present) > 1:
    text += f' ({min(present):.2f} to {max(present):.2f})'
  return text + ('' if len(present) == len(values) else
                 f' [{len(values) - len(present)} {missing}]')


def _bounds(rows) -> str:
  """The seeds' one-sided bounds, e.g. '>= 1.16 (2 seeds); <= 0.90'; '-'
  if every seed's ratio was measured or neither arm reached the target."""
  texts = []
  for key, sign, pick in (('speedup_at_least_vs_fp32_tf', '>=', min),
                          ('speedup_at_most_vs_fp32_tf', '<=', max)):
    present = [r[key] for r in rows if r[key] is not None]
    if present:
      seeds = f' ({len(present)} seeds)' if len(present) > 1 else ''
      texts.append(f'{sign} {pick(present):.2f}{seeds}')
  return '; '.join(texts) or '-'


def seed_table(rows, regimes, tasks, precisions) -> str:
  """Per regime, task and precision, over seeds: measured and predicted
  speedup, CO2 ratio, final return."""
  lines = []
  for regime, task, precision in itertools.product(regimes, tasks,
                                                   precisions):
    mine = [r for r in rows if (r['regime'], r['task'], r['precision']) ==
            (regime, task, precision)]
    if mine and precision != BASELINE:
      lines.append((
          regime, task, precision, len(mine),
          _spread([r['speedup_vs_fp32_tf'] for r in mine]),
          _spread([r['speedup_from_first_learner_step_vs_fp32_tf']
                   for r in mine]),
          _bounds(mine),
          _spread([r['predicted_speedup_vs_fp32_tf'] for r in mine], 'n/a'),
          ', '.join(sorted({r['bound'] for r in mine if r['bound']}))
          or '-',
          _spread([r['co2_to_target_ratio_vs_fp32_tf'] for r in mine]),
          _spread([100 * r['final_return_diff_vs_fp32_tf'] for r in mine
                   if r['final_return_diff_vs_fp32_tf'] is not None],
                  'no target'),
          _spread([r['fp32_return_gap'] for r in mine], 'n/a')))
  return analysis.markdown_table(
      ('regime', 'task', 'precision', 'seeds',
       'time-to-target speedup vs fp32_tf',
       'the same from the first learner step',
       'bound, where only one arm reached the target', 'predicted speedup',
       'bound',
       'CO2-to-target ratio vs fp32_tf',
       'final return minus fp32_tf, % of (best - floor)',
       'greedy return minus fp32 policy (--eval_fp32)'), lines)


def _regime_text(regimes) -> str:
  return '; '.join(f"{r} = {' '.join(REGIMES[r]) or 'the agent defaults'}"
                   for r in regimes)


def sweep_arguments(argv):
  """The command line that runs the sweep: --tables_only, which only
  rewrites its tables, left out."""
  return [arg for arg in argv if not arg.startswith('--tables_only')]


def write_results(out_dir, tasks, seeds, precisions, fraction,
                  regimes=('acme',)):
  """results.csv, results.md and plots from whatever runs are on disk."""
  all_rows, speedups, co2_ratios = [], {}, {}
  plots = os.path.join(out_dir, 'plots')
  os.makedirs(plots, exist_ok=True)
  for regime, task in itertools.product(regimes, tasks):
    label, name = f'{task} [{regime}]', f"{regime}_{task.replace(':', '_')}"
    task_rows = []
    for seed in seeds:
      rows, target, curves = compare_task(out_dir, regime, task, seed,
                                          precisions, fraction)
      task_rows += rows
      if curves:
        analysis.plot_curves(curves, f'{label} seed {seed}', os.path.join(
            plots, f'return_{name}_seed{seed}.png'), target)
    all_rows += task_rows
    speedups[label], co2_ratios[label] = {}, {}
    for precision in precisions:
      mine = [r for r in task_rows if r['precision'] == precision]
      for key, into in (('speedup_vs_fp32_tf', speedups),
                        ('co2_to_target_ratio_vs_fp32_tf', co2_ratios)):
        values = [r[key] for r in mine if r[key] is not None]
        into[label][precision] = statistics.mean(values) if values else None
  analysis.plot_bars(speedups, f'time-to-target speedup vs {BASELINE}',
                     'ActorQ speedup (mean over seeds)',
                     os.path.join(plots, 'speedup.png'))
  analysis.plot_bars(co2_ratios,
                     f'CO2-to-target ratio ({BASELINE} / precision)',
                     'ActorQ CO2 reduction (mean over seeds)',
                     os.path.join(plots, 'co2.png'))
  with open(os.path.join(out_dir, 'results.csv'), 'w', newline='') as handle:
    writer = csv.DictWriter(handle, FIELDS)
    writer.writeheader()
    writer.writerows(all_rows)
  table = analysis.markdown_table(
      ('regime', 'task', 'seed', 'precision', 'target', 'time to target (s)',
       'speedup vs fp32_tf', 'bound, where only one arm reached the target',
       'predicted (launch/analysis/pipeline_model.py)', 'bound',
       'time to target from the first learner step (s)',
       'the same, speedup vs fp32_tf', 'learner steps to target',
       'env steps to target', 'learner steps (run)', 'env steps (run)',
       'learner steps/s',
       'learner busy share',
       'speedup vs fp32 TFLite', 'final return',
       'best return', 'CO2 to target kg', 'CO2-to-target ratio vs fp32_tf',
       'energy kWh (run)', 'CO2 kg (run)', 'CO2 ratio (run) vs fp32_tf',
       'actor steps/s', 'actor time env/inference/adder/refresh %',
       'learner samples per transition',
       'greedy minus fp32 return', 'model bytes'),
      [(r['regime'], r['task'], r['seed'], r['precision'],
        analysis.fmt(r['target_return'], 4, missing='none'),
        analysis.fmt(r['time_to_target_s'], 4, 'not reached'),
        analysis.fmt(r['speedup_vs_fp32_tf']),
        _bounds([r]),
        analysis.fmt(r['predicted_speedup_vs_fp32_tf']), r['bound'] or '-',
        analysis.fmt(r['time_to_target_from_first_learner_step_s'], 4,
                     'not reached'),
        analysis.fmt(r['speedup_from_first_learner_step_vs_fp32_tf']),
        analysis.fmt(r['learner_steps_to_target'], missing='not reached'),
        analysis.fmt(r['actor_steps_to_target'], missing='not reached'),
        analysis.fmt(r['learner_steps'], missing='-'),
        analysis.fmt(r['actor_steps'], missing='-'),
        analysis.fmt(r['learner_steps_per_s'], 4),
        analysis.fmt(r['learner_busy_share'], 2),
        analysis.fmt(r['speedup_vs_fp32']),
        analysis.fmt(r['final_return'], 4), analysis.fmt(r['best_return'], 4),
        analysis.fmt(r['co2_to_target_kg'], 3, 'not reached'),
        analysis.fmt(r['co2_to_target_ratio_vs_fp32_tf']),
        analysis.fmt(r['energy_kwh']), analysis.fmt(r['co2_kg']),
        analysis.fmt(r['co2_ratio_vs_fp32_tf']),
        analysis.fmt(r['actor_steps_per_s'], 4), r['actor_time_split'],
        analysis.fmt(r['samples_per_transition'], 3, 'n/a'),
        analysis.fmt(r['fp32_return_gap']), r['model_bytes'] or '-')
       for r in all_rows])
  with open(os.path.join(out_dir, 'results.md'), 'w') as handle:
    handle.write(
        '# ActorQ reproduction\n\n'
        'Command: `python -m launch.reproduce_actorq '
        f'{" ".join(sweep_arguments(sys.argv[1:]))}`\n\n'
        f'Target rule: target = floor + {fraction} x (best - floor), where '
        'best is the best evaluation return any precision reached on that '
        'task and seed and floor is the better of the random-policy and '
        'zero-action returns; "none" where fewer than '
        f'{_MIN_EVALUATIONS_ABOVE_FLOOR} evaluations beat the floor. Time to '
        'target is the first evaluation at or above it; "not reached" if '
        'none. It is also given from the run\'s first learner step '
        '(time_to_first_learner_step_s in summary.json), which leaves out '
        'the start-up both arms share. Speedups and CO2 ratios are '
        'baseline / precision (higher is better). Where fp32_tf never '
        'reached the target and a precision did, the bound ">=" is '
        'fp32_tf\'s whole run over that time to target, a lower bound on '
        'the speedup; where only fp32_tf reached it, "<=" is its time to '
        'target over the precision\'s whole run, an upper bound. '
        'CO2 to target is the emissions codecarbon had counted by '
        'the time to target (interpolated between its cumulative rows); '
        '"(run)" columns cover the whole fixed budget, so they compare '
        'equal-length runs. The actor time split shows what bounds a run: a '
        'large adder share means actors wait on the replay rate limiter '
        '(learner-bound); large env or inference shares mean actor-bound. '
        '"Predicted" is launch/analysis/pipeline_model.py\'s speedup from the '
        'fp32_tf run\'s learner rate and freshness need and each run\'s '
        'unblocked actor rate; "bound" the stage that limited the run. '
        f'Regimes: {_regime_text(regimes)}.\n\n'
        '## Over seeds (mean, min to max)\n\n'
        f'{seed_table(all_rows, regimes, tasks, precisions)}\n\n'
        '## Every run\n\n'
        f'{table}\n\nPlots: `plots/`.\n')
  return all_rows


def main(argv):
  del argv
  entries = PAPER_TASKS if _FULL.value else tuple(_TASKS.value)
  for precision in _PRECISIONS.value:
    if precision not in ACTOR_PRECISIONS:
      cli.usage_exit('reproduce_actorq', f'unknown precision {precision!r}; '
                     f'choose from {", ".join(ACTOR_PRECISIONS)}')
  try:
    parsed = [parse_task(entry) for entry in entries]
  except ValueError as error:
    cli.usage_exit('reproduce_actorq', str(error))
  unknown = [r for r in _REGIMES.value if r not in REGIMES]
  if unknown:
    cli.usage_exit('reproduce_actorq', f'unknown regime {unknown[0]!r}; '
                   f'choose from {", ".join(REGIMES)}')
  results_dir = _RESULTS.value or _OUT.value
  configs, kept = [], []
  tasks = [task for task, _ in parsed]
  try:
    extra = launch_settings.parse_train_args(_EXTRA.value)
    for regime, (task, seconds), seed, precision in itertools.product(
        _REGIMES.value, parsed, _SEEDS.value, _PRECISIONS.value):
      if _TABLES_ONLY.value or run_dir_lib.finished_status(_run_dir(
          results_dir, regime, task, seed, precision)) == 'completed':
        continue
      agent, env = task.split(':', 1)
      # Every run resolved (and so checked) before the first one starts.
      configs.append(cli.resolve({
          'agent': agent, 'env': env, 'actor_precision': precision,
          'num_actors': _NUM_ACTORS.value,
          'max_seconds': seconds or _MAX_SECONDS.value, 'seed': int(seed),
          'preset': _PRESET.value, **regime_settings(regime, agent),
          **extra,
          'run_dir': _run_dir(_OUT.value, regime, task, seed, precision)}))
      kept.append(_run_dir(results_dir, regime, task, seed, precision))
  except cli.UsageError as error:
    cli.usage_exit('reproduce_actorq', str(error))

  def tables():
    """Writes the tables and plots of every run in results_dir; their paths."""
    write_results(results_dir, tasks, _SEEDS.value, _PRECISIONS.value,
                  _FRACTION.value, _REGIMES.value)
    return sweep.tables_in(results_dir)

  if configs:
    sweep.run_all(configs, after_each=lambda i: sweep.record(
        configs[i].run_dir, kept[i], RESULT_FILES, _COMMIT.value and
        f'reproduce_actorq: {os.path.relpath(kept[i], results_dir)}',
        refresh=tables))
  tables()
  with open(os.path.join(results_dir, 'results.md')) as handle:
    print(handle.read())


if __name__ == '__main__':
  cli.run_main(main, 'reproduce_actorq')

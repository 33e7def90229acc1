"""reproduce_gst's tables and plots, from the results directory alone.

Each finished run left summary.json, evaluator.csv and compression.csv
there (launch/reproduce_gst.py), so the tables regenerate on any machine
from a checkout that holds them. Returns are judged late, as the sparse-RL
literature does: the mean of the last LAST_EVALUATIONS evaluations, against
the dense arm's of the same seed.
"""
import csv
import os
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from launch.analysis import gst_plan
from launch.analysis import runs as analysis
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import summary as summary_lib

# Evaluations averaged for the late return: one evaluation (3 episodes) is
# noisy, Breakout's swinging from 0.7 to 10 between neighbours.
LAST_EVALUATIONS = summary_lib.LAST_EVALUATIONS
# Ultimate compression: the largest final sparsity whose late return stays
# within this fraction of dense (RLx2's 3%).
WITHIN_DENSE = 0.97
# The targets for GST over pruning, in points of average CR.
LEAD_TARGET_POINTS = 25.0
# The TD3 authors' HalfCheetah learning curve (sfujim/TD3 learning_curves,
# 10 seeds, HalfCheetah-v1, evaluations of 10 episodes): env steps ->
# (mean, std).
TD3_REFERENCE = {'HalfCheetah': {100_000: (5514.0, 554.0),
                                 150_000: (6239.0, 513.0)}}

RUN_FIELDS = ('agent', 'env', 'method', 'schedule', 'sparsity_final', 'seed',
              'average_cr', 'final_cr', 'final_network_cr', 'final_return',
              'best_return', 'last5_return', 'last5_vs_dense', 'actor_steps',
              'learner_steps', 'status')


def evaluations(run_dir: str) -> List[Tuple[float, float]]:
  """(env steps, return) of every evaluation."""
  rows = run_dir_lib.read_csv(os.path.join(run_dir,
                                           run_dir_lib.EVALUATOR_CSV))
  return [(float(r['actor_steps']), float(r['episode_return'])) for r in rows
          if r.get('episode_return') not in (None, '')]


def cr_curve(run_dir: str) -> List[Tuple[float, float]]:
  rows = run_dir_lib.read_csv(os.path.join(run_dir,
                                           run_dir_lib.COMPRESSION_CSV))
  return [(float(r['learner_step']), float(r['compressed_cr'])) for r in rows]


def return_at(points: List[Tuple[float, float]],
              env_steps: float) -> Optional[float]:
  """The evaluation nearest `env_steps` (None without evaluations)."""
  if not points:
    return None
  return min(points, key=lambda point: abs(point[0] - env_steps))[1]


def _mean(values) -> Optional[float]:
  values = [v for v in values if v is not None]
  return statistics.fmean(values) if values else None


def _late(points) -> Optional[float]:
  return analysis.late_return(points, LAST_EVALUATIONS)


def run_rows(agent: str, results_dir: str, arms: Sequence) -> List[Dict]:
  """One row per finished arm, its late return against dense's."""
  rows = []
  for arm in arms:
    run_dir = os.path.join(results_dir, arm.path)
    summary = analysis.load_json_if_exists(
        os.path.join(run_dir, run_dir_lib.SUMMARY_JSON))
    if not summary:
      continue
    dense = arm._replace(method='dense', schedule='', sparsity='')
    dense_late = _late(evaluations(os.path.join(results_dir, dense.path)))
    late = _late(evaluations(run_dir))
    rows.append(dict(
        agent=agent, env=arm.env, method=arm.method, schedule=arm.schedule,
        sparsity_final=arm.sparsity, seed=arm.seed,
        average_cr=summary.get('average_cr'), final_cr=summary.get('final_cr'),
        final_network_cr=summary.get('final_network_cr'),
        final_return=summary['final_return'],
        best_return=summary['best_return'], last5_return=late,
        last5_vs_dense=(late / dense_late if late is not None and dense_late
                        and dense_late > 0 else None),
        actor_steps=summary['actor_steps'],
        learner_steps=summary['learner_steps'], status=summary['status'],
        run_dir=run_dir))
  return rows


def arm_means(rows: List[Dict]) -> List[Dict]:
  """Mean over seeds per (env, method, schedule, sparsity), with the lead
  in average CR over the pruning arm on the same schedule and sparsity."""
  groups: Dict[Tuple, List[Dict]] = {}
  for row in rows:
    key = (row['env'], row['method'], row['schedule'], row['sparsity_final'])
    groups.setdefault(key, []).append(row)
  means = {key: dict(env=key[0], method=key[1], schedule=key[2],
                     sparsity_final=key[3], seeds=len(group),
                     average_cr=_mean(r['average_cr'] for r in group),
                     final_cr=_mean(r['final_cr'] for r in group),
                     last5_return=_mean(r['last5_return'] for r in group),
                     last5_vs_dense=_mean(r['last5_vs_dense'] for r in group))
           for key, group in groups.items()}
  for (env, method, schedule, sparsity), mean in means.items():
    seeds = {r['seed'] for r in groups[(env, method, schedule, sparsity)]}
    dense = _mean(r['last5_return'] for r in rows if r['env'] == env and
                  r['method'] == 'dense' and r['seed'] in seeds)
    # One seed whose dense run failed can swing the mean of per-seed ratios
    # (Hopper): the ratio of the means is the other reading of "of dense".
    mean['last5_mean_vs_dense_mean'] = (
        mean['last5_return'] / dense if mean['last5_return'] is not None
        and dense and dense > 0 else None)
    prune = next((means[k] for k in means if k[0] == env and
                  k[1].startswith('prune') and k[2:] == (schedule, sparsity)),
                 None)
    mean['lead_points'] = (
        100 * (mean['average_cr'] - prune['average_cr'])
        if method.startswith('gst') and prune and
        mean['average_cr'] is not None else None)
  return list(means.values())


def baseline_leads(rows: List[Dict]) -> List[Tuple]:
  """Per GST arm and each baseline arm (pruning, static, RigL) on the same
  env, schedule and final sparsity, over the seeds both ran (with those
  seeds' dense runs): both average CRs, GST's lead, both late returns
  against dense."""
  fmt = analysis.fmt
  arms: Dict[Tuple, Dict[str, Dict]] = {}
  for row in rows:
    key = (row['env'], row['method'], row['schedule'], row['sparsity_final'])
    arms.setdefault(key, {})[row['seed']] = row
  leads = []
  for (env, method, schedule, sparsity), gst_runs in arms.items():
    if not method.startswith('gst'):
      continue
    for (other_env, other, *setting), other_runs in arms.items():
      if not (other.startswith(gst_plan.BASELINES) and other_env == env and
              setting == [schedule, sparsity]):
        continue
      seeds = set(gst_runs) & set(other_runs)
      if not seeds:
        continue
      means = {m['method']: m for m in arm_means(
          [r for r in rows if r['env'] == env and r['seed'] in seeds and (
              r['method'] == 'dense' or r['run_dir'] in {
                  runs[seed]['run_dir'] for runs in (gst_runs, other_runs)
                  for seed in seeds})])}
      gst, base = means[method], means[other]
      lead = (None if None in (gst['average_cr'], base['average_cr'])
              else 100 * (gst['average_cr'] - base['average_cr']))
      leads.append((
          env, method, schedule or '-', sparsity, other,
          ', '.join(sorted(seeds, key=int)), fmt(gst['average_cr']),
          fmt(base['average_cr']), fmt(lead, 3),
          fmt(gst['last5_vs_dense'], 4), fmt(base['last5_vs_dense'], 4),
          fmt(gst['last5_mean_vs_dense_mean'], 4),
          fmt(base['last5_mean_vs_dense_mean'], 4)))
  return leads


def sweep_means(rows: List[Dict]) -> List[Dict]:
  """arm_means for the final-sparsity sweep, over the seeds each arm ran at
  every one of its sparsities (with those seeds' dense runs): a sweep run on
  seed 0 beside a 3-seed table compares seed 0 with seed 0."""
  seeds_by_arm: Dict[Tuple, Dict[str, set]] = {}
  for row in rows:
    if row['method'] != 'dense':
      key = (row['env'], row['method'], row['schedule'])
      seeds_by_arm.setdefault(key, {}).setdefault(
          row['sparsity_final'], set()).add(row['seed'])
  kept = {}
  for (env, method, schedule), by_sparsity in seeds_by_arm.items():
    if len(by_sparsity) < 2:
      continue
    seeds = set.intersection(*by_sparsity.values())
    for row in rows:
      if row['env'] == env and row['seed'] in seeds and (
          row['method'] == 'dense' or
          (row['method'], row['schedule']) == (method, schedule)):
        kept[row['run_dir']] = row
  return arm_means(list(kept.values()))


def ultimate(means: List[Dict]) -> List[Tuple]:
  """Per (env, method, schedule) of sweep_means: late/dense at each sparsity
  and the largest sparsity within WITHIN_DENSE of dense."""
  table, seeds = {}, {}
  for mean in means:
    if mean['method'] == 'dense':
      continue
    key = (mean['env'], mean['method'], mean['schedule'])
    table.setdefault(key, {})[float(mean['sparsity_final'])] = (
        mean['last5_vs_dense'])
    seeds[key] = mean['seeds']
  rows = []
  for (env, method, schedule), by_sparsity in table.items():
    kept = [s for s, ratio in by_sparsity.items()
            if ratio is not None and ratio >= WITHIN_DENSE]
    rows.append((env, method, schedule, seeds[(env, method, schedule)],
                 ', '.join(f'{s:g}: {analysis.fmt(r, 4)}'
                           for s, r in sorted(by_sparsity.items())),
                 analysis.fmt(max(kept) if kept else None, missing='none')))
  return rows


def reference_lines(rows: List[Dict], max_actor_steps: int) -> List[str]:
  """Dense TD3 against the TD3 authors' curve at the same env steps."""
  lines = []
  for env in sorted({r['env'] for r in rows if r['method'] == 'dense'}):
    task = next((t for t in TD3_REFERENCE if t in env), None)
    if task is None or rows[0]['agent'] != 'td3':
      continue
    dense = [r for r in rows if r['env'] == env and r['method'] == 'dense']
    for steps, (mean, std) in sorted(TD3_REFERENCE[task].items()):
      if steps > max_actor_steps:
        continue
      ours = [return_at(evaluations(r['run_dir']), steps) for r in dense]
      value = _mean(ours)
      lines.append(
          f'- {env} dense at {steps:,} env steps: {analysis.fmt(value, 4)} '
          f'(mean of {len(ours)} seeds; single evaluations '
          f'{", ".join(analysis.fmt(v, 4) for v in ours)}) against the TD3 '
          f'authors\' {mean:,.0f} +- {std:,.0f} (HalfCheetah-v1, 10 seeds): '
          f'{analysis.fmt(value / mean if value is not None else None)} of '
          'the reference.')
  return lines


def target_lines(means: List[Dict]) -> List[str]:
  lines = []
  for mean in means:
    if mean['lead_points'] is None:
      continue
    lead_ok = mean['lead_points'] >= LEAD_TARGET_POINTS
    ratio, of_means = mean['last5_vs_dense'], mean['last5_mean_vs_dense_mean']
    # Met only under both readings, so neither is picked for its verdict.
    reward_ok = all(r is not None and r >= WITHIN_DENSE
                    for r in (ratio, of_means))
    lines.append(
        f"- {mean['env']} {mean['method']} ({mean['schedule']}, final "
        f"sparsity {mean['sparsity_final']}, {mean['seeds']} seeds): "
        f"{mean['lead_points']:+.1f} points of average CR over pruning "
        f"(target +{LEAD_TARGET_POINTS:g}: {'met' if lead_ok else 'missed'}); "
        f"last-5 return {analysis.fmt(ratio, 4)} of dense by seed, "
        f"{analysis.fmt(of_means, 4)} by mean (target {WITHIN_DENSE:g} by "
        f"both: {'met' if reward_ok else 'missed'}).")
  return lines


def bound_lines(rows: List[Dict]) -> List[str]:
  """Per GST run: its lead over the same seed's pruning run and the most
  the schedule allows for its circulant plateau."""
  lines = []
  for row in rows:
    if not row['method'].startswith('gst'):
      continue
    prune = next((r for r in rows if r['method'].startswith('prune') and
                  all(r[k] == row[k] for k in ('env', 'schedule',
                                               'sparsity_final', 'seed'))),
                 None)
    if prune is None:
      continue
    plateau = analysis.circulant_plateau(row['run_dir'])
    bound = analysis.lead_bound(cr_curve(prune['run_dir']), plateau)
    lead = row['average_cr'] - prune['average_cr']
    lines.append(
        f"- {row['env']} {row['method']} ({row['schedule']}, "
        f"s_final {row['sparsity_final']}, seed {row['seed']}): "
        f"{100 * lead:+.1f} points over {prune['method']}; the schedule "
        f"allows at most {100 * bound:+.1f} for its circulant plateau of "
        f'{plateau:.4g}.')
  return lines


def _plots(agent: str, results_dir: str, rows: List[Dict]) -> None:
  plots = os.path.join(results_dir, 'plots')
  os.makedirs(plots, exist_ok=True)
  for env in sorted({r['env'] for r in rows}):
    first_seed = min(r['seed'] for r in rows if r['env'] == env)
    runs = {f"{r['method']} {r['schedule']} {r['sparsity_final']}".strip(): r
            for r in rows if r['env'] == env and r['seed'] == first_seed}
    name = f"{agent}_{env.replace(':', '_')}"
    analysis.plot_series(
        {label: cr_curve(r['run_dir']) for label, r in runs.items()},
        'learner step', 'compressed-layer CR',
        f'{env}: compression ratio (seed {first_seed})',
        os.path.join(plots, f'cr_{name}.png'))
    analysis.plot_series(
        {label: evaluations(r['run_dir']) for label, r in runs.items()},
        'env steps', 'evaluation return',
        f'{env}: evaluation return (seed {first_seed})',
        os.path.join(plots, f'return_{name}.png'))
    by_method = {}
    swept = sweep_means([r for r in rows if r['env'] == env])
    for mean in swept:
      if mean['env'] == env and mean['method'] != 'dense':
        by_method.setdefault(f"{mean['method']} {mean['schedule']}", []).append(
            (float(mean['sparsity_final']), mean['last5_return']))
    dense = next((m['last5_return'] for m in swept
                  if m['method'] == 'dense'), None)
    if any(len(points) > 1 for points in by_method.values()):
      analysis.plot_series(
          {label: sorted(p for p in points if p[1] is not None)
           for label, points in by_method.items()},
          'final sparsity',
          f'last-{LAST_EVALUATIONS} return (mean over the sweep\'s seeds)',
          f'{env}: return against final sparsity',
          os.path.join(plots, f'sparsity_{name}.png'),
          horizontal=None if dense is None else WITHIN_DENSE * dense)


def write(agent: str, results_dir: str, arms: Sequence,
          max_actor_steps: int) -> str:
  """Writes AGENT.csv (one row per run), AGENT.md and plots into
  results_dir; returns the markdown."""
  rows = run_rows(agent, results_dir, arms)
  means = arm_means(rows)
  os.makedirs(results_dir, exist_ok=True)
  with open(os.path.join(results_dir, f'{agent}.csv'), 'w',
            newline='') as handle:
    writer = csv.DictWriter(handle, RUN_FIELDS, extrasaction='ignore')
    writer.writeheader()
    writer.writerows(rows)
  if rows:
    _plots(agent, results_dir, rows)
  fmt = analysis.fmt
  runs_table = analysis.markdown_table(
      ('env', 'method', 'schedule', 's_final', 'seed', 'average CR',
       'final CR', 'final CR (network)', 'final return', 'best return',
       'last-5 return', 'last-5 / dense', 'env steps', 'learner steps'),
      [(r['env'], r['method'], r['schedule'] or '-',
        r['sparsity_final'] or '-', r['seed'], fmt(r['average_cr']),
        fmt(r['final_cr']), fmt(r['final_network_cr']),
        fmt(r['final_return'], 4), fmt(r['best_return'], 4),
        fmt(r['last5_return'], 4), fmt(r['last5_vs_dense']),
        r['actor_steps'], r['learner_steps']) for r in rows])
  means_table = analysis.markdown_table(
      ('env', 'method', 'schedule', 's_final', 'seeds', 'average CR',
       'final CR', 'lead over pruning (points)', 'last-5 return',
       'last-5 / dense', 'mean last-5 / dense mean'),
      [(m['env'], m['method'], m['schedule'] or '-',
        m['sparsity_final'] or '-', m['seeds'], fmt(m['average_cr']),
        fmt(m['final_cr']), fmt(m['lead_points'], 3), fmt(m['last5_return'], 4),
        fmt(m['last5_vs_dense'], 4), fmt(m['last5_mean_vs_dense_mean'], 4))
       for m in means])
  sections = [
      f'# GST reproduction ({agent}), from the runs under '
      f'`{os.path.basename(os.path.normpath(results_dir))}/`\n',
      'CR is over the compressed (hidden->hidden) layers unless marked '
      '"network" (the dense first/last layers and biases counted). Average '
      'CR is the mean of the per-learner-step CR over the run. "Last-5" is '
      f'the mean of the last {LAST_EVALUATIONS} evaluations, "/ dense" '
      'against the dense run of the same seed (n/a when that is not '
      'positive), averaged over seeds; "mean last-5 / dense mean" divides '
      'the means instead. Schedules: standard = cubic from 20% to 80% of the '
      "learner steps; early = the agent's earlier steps.\n",
      '## Runs\n', runs_table + '\n', '## Mean over seeds\n',
      means_table + '\n']
  leads = baseline_leads(rows)
  if any(not row[4].startswith('prune') for row in leads):
    sections += [
        '## GST against each baseline\n',
        'Same env, schedule and final sparsity, over the seeds both arms '
        'ran. static and rigl train sparse from scratch (element '
        'masks; _B4: 4x4 groups), so their average CR is their final CR '
        'from step 0.\n',
        analysis.markdown_table(
            ('env', 'GST arm', 'schedule', 's_final', 'baseline', 'seeds',
             'GST average CR', 'baseline average CR', 'GST lead (points)',
             'GST last-5 / dense', 'baseline last-5 / dense',
             'GST mean / dense mean', 'baseline mean / dense mean'),
            leads) + '\n']
  references = reference_lines(rows, max_actor_steps) if rows else []
  if references:
    sections += ['## Dense TD3 against the TD3 authors\' curve\n',
                 '\n'.join(references) + '\n']
  ultimate_rows = ultimate(sweep_means(rows))
  if ultimate_rows:
    sections += [
        '## Ultimate compression\n',
        f'Largest final sparsity whose last-5 return is >= {WITHIN_DENSE:g} '
        'of dense (mean over the seeds run at every sparsity).\n',
        analysis.markdown_table(
            ('env', 'method', 'schedule', 'seeds',
             'last-5 / dense by final sparsity',
             f'largest within {100 * (1 - WITHIN_DENSE):g}% of dense'),
            ultimate_rows) + '\n']
  targets = target_lines(means)
  if targets:
    sections += ['## Targets\n', '\n'.join(targets) + '\n']
  bounds = bound_lines(rows)
  if bounds:
    sections += [
        '## What the schedule allows\n',
        'A GST arm holds its circulant plateau until pruning passes it, then '
        'follows the same schedule, so the schedule bounds its lead:\n',
        '\n'.join(bounds) + '\n']
  text = '\n'.join(sections)
  with open(os.path.join(results_dir, f'{agent}.md'), 'w') as handle:
    handle.write(text)
  return text

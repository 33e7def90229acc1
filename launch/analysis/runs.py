"""Comparing runs: time to a target return, speedups, CO2 ratios, plots.

Pure functions over run directories, shared by the reproduce scripts, the
notebooks and their tests.
"""
import json
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from launch.runtime import run_dir as run_dir_lib
from quarl import carbon

Curve = List[Tuple[float, float]]  # (wall_time_s, episode_return)


def load_curve(run_dir: str) -> Curve:
  rows = run_dir_lib.read_csv(os.path.join(run_dir, run_dir_lib.EVALUATOR_CSV))
  return [(float(r['wall_time_s']), float(r['episode_return'])) for r in rows
          if r.get('episode_return') not in (None, '')]


def steps_at(run_dir: str, seconds: Optional[float]):
  """(learner steps, actor steps) of the evaluation at `seconds` into the
  run, e.g. at its time to target; (None, None) without one."""
  if seconds is None:
    return None, None
  for row in run_dir_lib.read_csv(os.path.join(run_dir,
                                               run_dir_lib.EVALUATOR_CSV)):
    if float(row['wall_time_s']) == seconds:
      return int(row['learner_steps']), int(row['actor_steps'])
  return None, None


def late_return(curve: Curve, count: int) -> Optional[float]:
  """Mean return of the curve's last `count` evaluations (None before
  any)."""
  returns = [value for _, value in curve][-count:]
  return sum(returns) / len(returns) if returns else None


def load_json_if_exists(path: str):
  if not os.path.exists(path):
    return None
  with open(path) as handle:
    return json.load(handle)


def target_return(best: float, floor: float, fraction: float = 0.9) -> float:
  """The stated rule: floor + fraction * (best - floor).

  `best` is the best evaluation any compared run reached, `floor` the random
  policy's return. Measuring from the random return (not from zero) keeps
  the rule meaningful for negative-reward tasks such as Pendulum.
  """
  return floor + fraction * (best - floor)


def time_to_target(curve: Curve, target: float) -> Optional[float]:
  """First wall time at which an evaluation reached `target`; None if never
  (reported as 'not reached', never as infinity or zero)."""
  for wall_time, episode_return in curve:
    if episode_return >= target:
      return wall_time
  return None


def emissions_at(run_dir: str, seconds: Optional[float]
                 ) -> Tuple[Optional[float], Optional[float]]:
  """(energy kWh, CO2 kg) the run had used `seconds` into it.

  codecarbon appends cumulative rows (every flush) with the seconds since
  the tracker started; a resumed run's tracker starts again from zero, so
  the rows are first put on the whole run's clock (quarl/carbon/segments.py)
  and then interpolated linearly. The tracker starts with the program, so
  this is energy *to* a point such as the time to target, which is what
  ActorQ's CO2 claim compares.
  """
  points = carbon.cumulative_points(run_dir)
  if seconds is None or not points:
    return None, None
  times, energy, co2 = zip(*points)
  return (float(np.interp(seconds, times, energy)),
          float(np.interp(seconds, times, co2)))


def ratio(baseline: Optional[float], value: Optional[float]) -> Optional[float]:
  """baseline / value, or None when either side is missing or zero."""
  if baseline is None or value is None or value == 0:
    return None
  return baseline / value


def fmt(value, digits: int = 3, missing: str = 'n/a') -> str:
  if value is None:
    return missing
  if isinstance(value, float):
    if math.isnan(value):
      return 'n/a'
    return f'{value:.{digits}g}'
  return str(value)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
  lines = ['| ' + ' | '.join(header) + ' |',
           '|' + '---|' * len(header)]
  lines += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
  return '\n'.join(lines)


def plot_curves(curves: Dict[str, Curve], title: str, path: str,
                target: Optional[float] = None) -> None:
  """Return vs wall-clock time, one line per label."""
  plot_series(curves, 'wall-clock time (s)', 'evaluation return', title,
              path, target)


def plot_series(series: Dict[str, Curve], xlabel: str, ylabel: str,
                title: str, path: str,
                horizontal: Optional[float] = None) -> None:
  """One line per label; an optional dashed horizontal reference."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  figure, axis = plt.subplots(figsize=(6, 4))
  for label, points in series.items():
    if points:
      axis.plot(*zip(*points), marker='.', label=label)
  if horizontal is not None:
    axis.axhline(horizontal, color='grey', linestyle='--', label='target')
  axis.set(xlabel=xlabel, ylabel=ylabel, title=title)
  axis.legend()
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)


def plot_bars(values: Dict[str, Dict[str, Optional[float]]], ylabel: str,
              title: str, path: str) -> None:
  """Grouped bars: values[group][label]; missing values are left out."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  groups = list(values)
  labels = sorted({label for group in values.values() for label in group})
  width = 0.8 / max(len(labels), 1)
  figure, axis = plt.subplots(figsize=(max(6, 1.5 * len(groups)), 4))
  for i, label in enumerate(labels):
    xs = [g + i * width for g, group in enumerate(groups)
          if values[group].get(label) is not None]
    ys = [values[group][label] for group in groups
          if values[group].get(label) is not None]
    axis.bar(xs, ys, width, label=label)
  axis.axhline(1.0, color='grey', linestyle='--')
  axis.set_xticks([g + width * (len(labels) - 1) / 2
                   for g in range(len(groups))])
  axis.set_xticklabels(groups, rotation=15, ha='right')
  axis.set(ylabel=ylabel, title=title)
  axis.legend()
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)


def circulant_plateau(run_dir: str) -> float:
  """The highest CR a GST run held before pruning took over."""
  return max(float(r['compressed_cr']) for r in run_dir_lib.read_csv(
      os.path.join(run_dir, run_dir_lib.COMPRESSION_CSV))
             if r['phase'] == 'circulant')


def lead_bound(prune_curve: List[Tuple[float, float]],
               plateau: float) -> float:
  """The most average CR a GST arm can add to a pruning run on the same
  schedule: it holds its circulant `plateau` until pruning's ramp passes it,
  then follows the same ramp. So the schedule, not GST, caps the lead."""
  crs = [cr for _, cr in prune_curve]
  return sum(max(plateau, cr) - cr for cr in crs) / len(crs)

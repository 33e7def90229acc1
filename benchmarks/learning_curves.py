"""Learning curves of recorded runs: return against env steps over seeds.

Kept free of flags so the benchmark scripts that print these tables and
their tests can import it side by side.
"""
import os
import statistics
from typing import Dict, Iterable, List, Optional, Tuple

from launch.runtime import run_dir as run_dir_lib

Curve = List[Tuple[float, float]]


def curves(results_dir: str, game: str, arms: Iterable[str],
           env_steps_per_update: int) -> Dict[str, Dict[str, Curve]]:
  """arm -> seed -> [(env steps, evaluation return)] of every finished run
  recorded under RESULTS_DIR/GAME/ARM/seed_N, in the order of `arms`.

  The env steps are those the evaluated weights were trained on. SB3
  evaluates between updates, so its rows' actor_steps are; our actors run
  ahead of the learner by the trajectories in flight, so our rows count
  learner_steps x env_steps_per_update instead.
  """
  found = {}
  for arm in arms:
    top = os.path.join(results_dir, game, arm)
    for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
      path = os.path.join(top, name)
      if run_dir_lib.finished_status(path) != 'completed':
        continue
      rows = run_dir_lib.read_csv(os.path.join(path,
                                               run_dir_lib.EVALUATOR_CSV))
      found.setdefault(arm, {})[name[len('seed_'):]] = [
          (float(row['learner_steps']) * env_steps_per_update
           if 'learner_steps' in row else float(row['actor_steps']),
           float(row['episode_return'])) for row in rows]
  return found


def at(curve: Curve, steps: float, every: int) -> Optional[float]:
  """The evaluation nearest `steps` env steps, if one is within half an
  evaluation interval (a learner reaches its evaluation steps a little late,
  and a resumed run evaluates once off the grid)."""
  near = [(abs(x - steps), value) for x, value in curve
          if abs(x - steps) <= every / 2]
  return min(near)[1] if near else None


def _grid(budget: int, every: int) -> List[int]:
  return list(range(every, budget + 1, every))


def _seeds_at(by_seed: Dict[str, Curve], steps: int,
              every: int) -> List[float]:
  """Each seed's evaluation at `steps`, of the seeds that have one."""
  return [v for v in (at(c, steps, every) for c in by_seed.values())
          if v is not None]


def _over_seeds(values: List[float]) -> str:
  return (f'{statistics.mean(values):.2f} [{min(values):.1f}, '
          f'{max(values):.1f}]' if values else 'n/a')


def table(found: Dict[str, Dict[str, Curve]], budget: int,
          every: int) -> str:
  """Return against env steps: mean [min, max] over seeds, per arm; last,
  each seed's mean over the last 5 rows, so every arm is averaged over the
  same env steps."""
  arms = list(found)
  grid = _grid(budget, every)
  lines = ['| env steps | ' + ' | '.join(
      f'{arm} (seeds {", ".join(sorted(found[arm]))})' for arm in arms)
           + ' |', '|---|' + '---|' * len(arms)]
  for steps in grid:
    lines.append(f'| {steps:,} | ' + ' | '.join(
        _over_seeds(_seeds_at(found[arm], steps, every)) for arm in arms)
                 + ' |')
  last = []
  for arm in arms:
    per_seed = []
    for curve in found[arm].values():
      values = [v for v in (at(curve, steps, every) for steps in grid[-5:])
                if v is not None]
      if values:
        per_seed.append(statistics.mean(values))
    last.append(_over_seeds(per_seed))
  lines.append(f'| mean of the last {len(grid[-5:])} rows | '
               + ' | '.join(last) + ' |')
  return '\n'.join(lines)


def plot(found: Dict[str, Dict[str, Curve]], budget: int, every: int,
         title: str, path: str) -> None:
  """Mean over seeds with its range shaded, per arm."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  figure, axis = plt.subplots(figsize=(6, 4))
  for arm, by_seed in found.items():
    points = []
    for steps in _grid(budget, every):
      values = _seeds_at(by_seed, steps, every)
      if values:
        points.append((steps, statistics.mean(values), min(values),
                       max(values)))
    if points:
      x, mean, low, high = zip(*points)
      axis.plot(x, mean, marker='.',
                label=f'{arm} (seeds {", ".join(sorted(by_seed))})')
      axis.fill_between(x, low, high, alpha=0.2)
  axis.set(xlabel='env steps', ylabel='evaluation return',
           title=title)
  axis.legend()
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)

"""Learning curves of recorded runs: return against env steps over seeds.

Kept free of flags so the benchmark scripts that print these tables and
their tests can import it side by side.
"""
import os
import statistics
from typing import Dict, Iterable, List, Optional, Tuple

from launch.runtime import run_dir as run_dir_lib

Curve = List[Tuple[float, float]]


def curves(results_dir: str, game: str,
           arms: Iterable[str]) -> Dict[str, Dict[str, Curve]]:
  """arm -> seed -> [(env steps, evaluation return)] of every finished run
  recorded under RESULTS_DIR/GAME/ARM/seed_N, in the order of `arms`."""
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
          (float(row['actor_steps']), float(row['episode_return']))
          for row in rows]
  return found


def at(curve: Curve, steps: float) -> Optional[float]:
  """The latest evaluation at or before `steps` env steps."""
  before = [value for x, value in curve if x <= steps]
  return before[-1] if before else None


def table(found: Dict[str, Dict[str, Curve]], budget: int,
          every: int) -> str:
  """Return against env steps: mean [min, max] over seeds, per arm."""
  arms = list(found)
  grid = list(range(every, budget + 1, every))
  lines = ['| env steps | ' + ' | '.join(
      f'{arm} (seeds {", ".join(sorted(found[arm]))})' for arm in arms)
           + ' |', '|---|' + '---|' * len(arms)]
  for steps in grid:
    cells = []
    for arm in arms:
      values = [v for v in (at(c, steps) for c in found[arm].values())
                if v is not None]
      cells.append(f'{statistics.mean(values):.2f} [{min(values):.1f}, '
                   f'{max(values):.1f}]' if values else 'n/a')
    lines.append(f'| {steps:,} | ' + ' | '.join(cells) + ' |')
  last = []
  for arm in arms:
    last5 = [statistics.mean(v for _, v in c[-5:])
             for c in found[arm].values() if c]
    last.append(f'{statistics.mean(last5):.2f} [{min(last5):.1f}, '
                f'{max(last5):.1f}]' if last5 else 'n/a')
  lines.append('| last 5 evaluations | ' + ' | '.join(last) + ' |')
  return '\n'.join(lines)


def plot(found: Dict[str, Dict[str, Curve]], budget: int, every: int,
         title: str, path: str) -> None:
  """Mean over seeds with its range shaded, per arm."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  figure, axis = plt.subplots(figsize=(6, 4))
  grid = list(range(every, budget + 1, every))
  for arm, by_seed in found.items():
    points = []
    for steps in grid:
      values = [v for v in (at(c, steps) for c in by_seed.values())
                if v is not None]
      if values:
        points.append((steps, statistics.mean(values), min(values),
                       max(values)))
    if points:
      x, mean, low, high = zip(*points)
      axis.plot(x, mean, marker='.', label=f'{arm} ({len(by_seed)} seeds)')
      axis.fill_between(x, low, high, alpha=0.2)
  axis.set(xlabel='env steps', ylabel='evaluation return',
           title=title)
  axis.legend()
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)

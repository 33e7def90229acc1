"""A run's emissions.csv across resumes: one segment per launch.

Every launch of a run (the first, then each --resume) has its own
codecarbon tracker, whose rows count from zero under a new run_id. So the
whole run's figures are the sum of each segment's last row, and a row's
place in the run is its own figures plus every earlier segment's totals.
"""
import csv
import dataclasses
import os
from typing import List, Tuple

EMISSIONS_FILE = 'emissions.csv'
Point = Tuple[float, float, float]  # (seconds, energy kWh, CO2 kg)


@dataclasses.dataclass
class Segment:
  run_id: str
  points: List[Point]  # Cumulative within the segment.

  @property
  def totals(self) -> Point:
    return self.points[-1]


def read_segments(run_dir: str) -> List[Segment]:
  """emissions.csv's rows, split where the tracker changes (its run_id, or
  its seconds going back: a row written without a run_id)."""
  path = os.path.join(run_dir, EMISSIONS_FILE)
  if not os.path.exists(path):
    return []
  with open(path, newline='') as handle:
    rows = [row for row in csv.DictReader(handle) if row.get('duration')]
  segments = []
  for row in rows:
    point = (float(row['duration']), float(row['energy_consumed']),
             float(row['emissions']))
    run_id = row.get('run_id') or ''
    if (not segments or run_id != segments[-1].run_id or
        point[0] < segments[-1].totals[0]):
      segments.append(Segment(run_id, []))
    segments[-1].points.append(point)
  return segments


def cumulative_points(run_dir: str) -> List[Point]:
  """Every row as (run seconds, kWh, kg) so far in the whole run: each
  segment shifted by the totals of those before it. Time between launches
  is left out, as the run's own clock leaves it out (launch/runtime/runner.py)."""
  points, offset = [], (0.0, 0.0, 0.0)
  for segment in read_segments(run_dir):
    points += [tuple(o + v for o, v in zip(offset, point))
               for point in segment.points]
    offset = points[-1]
  return points

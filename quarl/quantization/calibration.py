"""Calibration data for a publish: how much, from where, and the split.

A publish calibrates int8 ranges on CALIBRATION_SAMPLES observations and
reports its errors on held-out ones the calibrator never saw. They come from
the replay's calibration table (what actors saw recently) once it holds
enough distinct observations; before that (the first publishes), or when a
stalled policy fills it with one frame (Breakout unserved), from a rollout of
uniformly random actions.
"""
from typing import Optional, Tuple

import numpy as np

from quarl import envs

CALIBRATION_SAMPLES = 256
HELD_OUT_SAMPLES = 64
# Rollout observations: the calibration set and HELD_OUT_SAMPLES held out.
ROLLOUT_SAMPLES = CALIBRATION_SAMPLES + HELD_OUT_SAMPLES
# Replay observations drawn per publish: uniform sampling repeats items, and
# repeats are dropped, so twice what is kept.
REPLAY_DRAW = 2 * ROLLOUT_SAMPLES
# Fewer distinct replay observations than this: use the rollout's.
MIN_DISTINCT_SAMPLES = HELD_OUT_SAMPLES


def rollout_observations(environment, num_steps: int,
                         rng: np.random.Generator) -> np.ndarray:
  """Real observations from uniformly random actions."""
  action_spec = environment.action_spec()
  observations = []
  timestep = environment.reset()
  for _ in range(num_steps):
    observations.append(np.asarray(timestep.observation, np.float32).ravel())
    timestep = environment.step(envs.random_action(action_spec, rng))
    if timestep.last():
      timestep = environment.reset()
  return np.stack(observations)


def split(observations: Optional[np.ndarray], rollout: np.ndarray
          ) -> Tuple[np.ndarray, np.ndarray, str]:
  """(calibration, held, source): disjoint distinct replay observations when
  there are at least MIN_DISTINCT_SAMPLES, else the rollout's first
  CALIBRATION_SAMPLES and the rest.

  Each replay observation is kept once (episode ends repeat one across
  items), so no held one was also seen by the calibrator; non-finite ones
  are dropped. Of n distinct ones, what exceeds CALIBRATION_SAMPLES is held
  out, and at least a fifth.
  """
  if observations is not None:
    # A non-finite row (a replay from before environments were checked at
    # the door) would make an int8 range NaN: never calibrated on.
    distinct = {row.tobytes(): row for row in observations
                if np.all(np.isfinite(row))}
    observations = np.stack(list(distinct.values())) if distinct else None
  if observations is None or len(observations) < MIN_DISTINCT_SAMPLES:
    return (rollout[:CALIBRATION_SAMPLES], rollout[CALIBRATION_SAMPLES:],
            'rollout')
  held = max(len(observations) - CALIBRATION_SAMPLES,
             len(observations) // 5)
  return observations[held:], observations[:held], 'replay'

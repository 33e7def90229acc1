"""Sparsity schedules: Zhu & Gupta's cubic ramp and GST's reward-aware clock.

The cubic schedule (Zhu & Gupta 2017, "To prune, or not to prune") prunes fast
early and slowly near the end:
    s(t) = s_f + (s_i - s_f) * (1 - (t - t0) / n)^3,  t clipped to [t0, t0 + n].

This is TF Model Optimization's `PolynomialDecay` with power 3, which the
iterative-pruning baseline uses itself. GST does not feed it the learner step
but its own clock, which only ticks while evaluation return holds (see
`RewardAwareClock`).
"""
import dataclasses
import math
from typing import Optional

import numpy as np
import tensorflow as tf

from quarl.compression import masks


def check_ramp(s_init: float, s_final: float, begin_step: int,
               end_step: int) -> None:
  """The checks every s_init -> s_final ramp over [begin, end] needs."""
  masks.check_sparsity(s_init, 's_init')
  masks.check_sparsity(s_final, 's_final')
  if s_final < s_init:
    raise ValueError(f's_final ({s_final}) must be >= s_init ({s_init})')
  if begin_step < 0:
    raise ValueError(f'begin_step must be >= 0, got {begin_step}')
  if end_step <= begin_step:
    raise ValueError(f'end_step ({end_step}) must be > begin_step '
                     f'({begin_step})')


@dataclasses.dataclass(frozen=True)
class CubicSchedule:
  """s_init -> s_final over [begin_step, end_step]; constant outside it."""
  s_init: float
  s_final: float
  begin_step: int
  end_step: int

  def __post_init__(self):
    check_ramp(self.s_init, self.s_final, self.begin_step, self.end_step)

  def __call__(self, step) -> float:
    span = self.end_step - self.begin_step
    progress = min(max((float(step) - self.begin_step) / span, 0.0), 1.0)
    return self.s_final + (self.s_init - self.s_final) * (1.0 - progress) ** 3

  def step_at(self, sparsity: float) -> int:
    """Latest integer step whose target is <= `sparsity` (inverse of s)."""
    if sparsity <= self.s_init:
      return self.begin_step
    if sparsity >= self.s_final:
      return self.end_step
    fraction_left = (sparsity - self.s_final) / (self.s_init - self.s_final)
    remaining = fraction_left ** (1 / 3)
    span = self.end_step - self.begin_step
    return self.begin_step + math.floor(span * (1.0 - remaining))


class RewardAwareClock(tf.Module):
  """The cubic schedule's clock, gated by recent evaluation return.

  * `advance(steps)` adds learner steps to the clock unless it is paused.
  * `observe(value)` records an evaluation return. The moving average of the
    last `window` returns (fewer until `window` have arrived) is compared with
    the best moving average seen so far. It is *below* when it falls more than
    the band `delta * max(best - reference, |reference|)` under the best.
    While the latest evaluation is below, the clock is paused; an evaluation
    that holds resumes it.
  * Every `patience` consecutive evaluations below, the target steps back by
    `step_back`: the clock is moved back to the latest step whose scheduled
    target is <= current target - step_back (never before `begin_step`), so
    later ticks retrace the ramp from there. Masks rebuilt at the lower target
    regrow pruned groups, which start at zero.
  The best moving average is never reset, so a sustained drop keeps stepping
  back until the return recovers or the target reaches s_init.

  Why a reference: a band relative to |best| is zero when the best return is
  about 0 (early HalfCheetah), so any dip paused the clock. The band is a
  fraction of what the policy has learned over a reference return, the
  random policy's (the launcher measures it, as summary.json does); so it
  means the same on tasks whose returns are all negative (Pendulum: random
  -1500, trained -200). Until the learned gap exceeds |reference| the band
  is delta * |reference|: a policy that has barely beaten chance is not held
  to a hair-trigger. Without a reference the first return observed is used,
  which needs no extra episodes but is a weaker floor (an untrained policy
  may score near 0). The reference is a variable, saved with the clock.
  """

  def __init__(self, schedule: CubicSchedule, window: int = 5,
               delta: float = 0.1, step_back: float = 0.05, patience: int = 3,
               reference: Optional[float] = None,
               name: str = 'reward_aware_clock'):
    super().__init__(name=name)
    if window < 1 or patience < 1:
      raise ValueError(f'reward window ({window}) and patience ({patience}) '
                       'must be >= 1')
    if not 0 <= delta < math.inf:  # nan would never pause the clock.
      raise ValueError(f'reward delta must be finite and >= 0, got {delta}')
    if not 0 < step_back < 1:
      raise ValueError(f'step_back must be in (0, 1), got {step_back}')
    if reference is not None and not math.isfinite(reference):
      raise ValueError(f'reward reference must be finite, got {reference}')
    self.schedule = schedule
    self._window, self._delta = window, delta
    self._step_back, self._patience = step_back, patience
    self.tick = tf.Variable(0, dtype=tf.int64, trainable=False, name='tick')
    self._returns = tf.Variable(tf.zeros([window], tf.float64), trainable=False,
                                name='returns')
    self._seen = tf.Variable(0, dtype=tf.int64, trainable=False, name='seen')
    self._best = tf.Variable(-np.inf, dtype=tf.float64, trainable=False,
                             name='best')
    self._below = tf.Variable(0, dtype=tf.int64, trainable=False, name='below')
    # nan until the first return when no reference is given.
    self._reference = tf.Variable(
        np.nan if reference is None else reference, dtype=tf.float64,
        trainable=False, name='reference')

  @property
  def paused(self) -> bool:
    return int(self._below.numpy()) > 0

  @property
  def best(self) -> float:
    return float(self._best.numpy())

  @property
  def reference(self) -> float:
    """The return the band is measured from (nan before any, if not given)."""
    return float(self._reference.numpy())

  def band(self) -> float:
    """How far below the best the moving average may fall and still hold."""
    reference = self.reference
    return self._delta * max(self.best - reference, abs(reference))

  def sparsity(self) -> float:
    return self.schedule(int(self.tick.numpy()))

  def moving_average(self) -> float:
    """Mean of the last `window` returns (nan before any)."""
    seen = min(int(self._seen.numpy()), self._window)
    if not seen:
      return float('nan')
    return float(np.mean(self._returns.numpy()[:seen]))

  def advance(self, steps: int = 1) -> None:
    if not self.paused:
      self.tick.assign_add(steps)

  def observe(self, value: float) -> None:
    """Feeds an evaluation return; a non-finite one says nothing about the
    policy and is ignored (it would poison the moving average and reset the
    pause count)."""
    if not math.isfinite(value):
      return
    self._returns.scatter_nd_update(
        [[int(self._seen.numpy()) % self._window]], [float(value)])
    self._seen.assign_add(1)
    if math.isnan(self.reference):
      self._reference.assign(float(value))
    average = self.moving_average()
    self._best.assign(max(self.best, average))
    if average < self.best - self.band():
      self._below.assign_add(1)
      if int(self._below.numpy()) % self._patience == 0:
        self._move_back()
    else:
      self._below.assign(0)

  def _move_back(self) -> None:
    target = self.sparsity() - self._step_back
    self.tick.assign(min(int(self.tick.numpy()), self.schedule.step_at(target)))


def cosine_drop_fraction(step: int, initial: float, end_step: int) -> float:
  """RigL's drop fraction at `step`: initial/2 * (1 + cos(pi * step /
  end_step)), 0 from end_step on (Evci et al. 2020, eq. 1)."""
  if step >= end_step:
    return 0.0
  return initial / 2 * (1.0 + math.cos(math.pi * max(step, 0) / end_step))

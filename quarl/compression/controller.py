"""Compression controllers: what a learner calls after each optimizer step
(the interface and CR accounting: quarl/compression/base.py).

* `GstController` — layers start block-circulant at step 0 and hand over to
  group pruning once the reward-aware target reaches S_shift * (1 - 1/B).
* `IterativePruningController` — the baseline: TF Model Optimization's
  magnitude pruning (its PolynomialDecay schedule and block masks, run by
  TFMOT's own code) from a dense start, no reward awareness.
* `StaticSparseController`, `RigLController` — sparse training from
  scratch (quarl/compression/sparse_training.py).
* `NoCompression` — the dense baseline with the same interface.
"""
import inspect
from typing import Optional, Sequence

import tensorflow as tf
from absl import logging
import tensorflow_model_optimization as tfmot
from tensorflow_model_optimization.python.core.sparsity.keras import pruning_impl

from quarl.compression import circulant
from quarl.compression import config as config_lib
from quarl.compression import layers as layers_lib
from quarl.compression import schedules
from quarl.compression import sparse_training
from quarl.compression.base import CompressionController

# Float slack so a target computed as 0.7499999999 still meets 0.75.
_TOLERANCE = 1e-9


class NoCompression(CompressionController):
  """Dense baseline: layers stay dense, CR stays 0."""

  compresses = False

  def __init__(self, layers: Sequence[layers_lib.CompressibleLinear] = (),
               dense_params: int = 0, name: str = 'no_compression'):
    super().__init__(layers, dense_params=dense_params, name=name)

  def target_sparsity(self) -> float:
    return 0.0


class IterativePruningController(CompressionController):
  """Baseline: TF Model Optimization's magnitude pruning on our layers.

  The field's "iterative pruning" (Zhu & Gupta) as TFMOT implements it, run
  by TFMOT's own code rather than a copy: its `PolynomialDecay(s_init,
  s_final, begin_step, end_step, power=3, frequency=update_every)` and its
  `Pruning` mask update (|w| AVG-pooled over BxB groups, or single weights
  with granularity='element'; the round((1 - s) * groups) largest kept, ties
  at the threshold kept). Masks change only at TFMOT's pruning steps,
  begin_step + k * update_every up to end_step, and nothing is pruned before
  begin_step. TFMOT numbers the batch a mask is used for, so the masks in
  force after learner step t are TFMOT's for step t + 1; a sync that lands
  past a pruning step (the learner syncs every update_every steps) applies
  that step's target to the current weights.
  """

  def __init__(self, layers: Sequence[layers_lib.CompressibleLinear], *,
               s_init: float, s_final: float, begin_step: int, end_step: int,
               block_size: int, granularity: str, update_every: int,
               dense_params: int = 0, name: str = 'iterative_pruning'):
    super().__init__(layers, granularity, update_every, dense_params, name)
    schedules.check_ramp(s_init, s_final, begin_step, end_step)
    circulant.check_block_size(block_size)
    self.schedule = tfmot.sparsity.keras.PolynomialDecay(
        s_init, s_final, begin_step, end_step, power=3,
        frequency=update_every)
    self._pooled_block = ((block_size, block_size) if granularity == 'block'
                          else (1, 1))
    # The TFMOT pruning step whose masks the layers hold; -1 before any.
    self._mask_step = tf.Variable(-1, dtype=tf.int64, trainable=False,
                                  name='mask_step')
    for layer in self.layers:
      layer.set_block_size(block_size)

  def target_sparsity(self) -> float:
    """The target of the masks in force (0 before begin_step)."""
    step = int(self._mask_step.numpy())
    return float(self.schedule(step)[1]) if step >= 0 else 0.0

  def _update_layers(self, previous: int, learner_step: int) -> None:
    del previous  # _mask_step (saved) says which pruning steps are done.
    step = self._last_pruning_step(learner_step + 1)
    if step <= int(self._mask_step.numpy()):
      return
    self._mask_step.assign(step)
    pruning = pruning_impl.Pruning(
        training_step_fn=lambda: step, pruning_vars=[],
        pruning_schedule=self.schedule, block_size=self._pooled_block,
        block_pooling_type='AVG')
    for layer in self.layers:
      # The matrix view: TFMOT pools 2-D kernels only (a conv's is 4-D).
      _, mask = pruning._maybe_update_block_mask(layer.kernel_matrix())  # pylint: disable=protected-access
      layer.set_mask(mask)

  def _last_pruning_step(self, step: int) -> int:
    """TFMOT's latest pruning step <= `step`; -1 before begin_step."""
    begin, every = self.schedule.begin_step, self.update_every
    if step < begin:
      return -1
    return begin + (min(step, self.schedule.end_step) - begin) // every * every


# Block-size transforms in GST's life cycle (docs/architecture.md, "Block-
# size transforms"): name -> (start pattern, the rung the layer moves to at
# the S_shift point, pruning group size). Patterns are (B, block4-friendly).
# The layer hands over to group pruning once the target reaches the rung's
# CR, so CR never falls to S_shift * CR_circulant at the hand-over.
TRANSFORMS = {
    'projection': ((4, False), (2, False), 2),
    'b4_friendly_b2': ((4, False), (2, True), 4),
    'b4_friendly_b4': ((2, True), (4, False), 4),
}
TRANSFORM_NAMES = ('none',) + tuple(TRANSFORMS)


class GstController(CompressionController):
  """GST: block-circulant from step 0, reward-aware hand-over to group pruning.

  A layer leaves circulant form the first step the target sparsity reaches
  s_shift * (1 - 1/B); from then on it is group-pruned (BxB groups) and stays
  so even if the target later steps back below that threshold.
  `reward_reference` is the return the clock's pause band is measured from
  (the random policy's; None: the first return observed), see
  `schedules.RewardAwareClock`.

  With a `transform` (B=4 only; TRANSFORMS), a layer starts in the ladder's
  start pattern, moves to its rung at the S_shift point (the transform's
  weight shift is measured and reported), and hands over to pruning in the
  ladder's group size once the target reaches the rung's CR.
  """

  def __init__(self, layers: Sequence[layers_lib.CompressibleLinear], *,
               block_size: int, s_shift: float, s_init: float, s_final: float,
               begin_step: int, end_step: int, reward_window: int,
               reward_delta: float, step_back: float, patience: int,
               reward_reference: Optional[float], transform: str,
               granularity: str, update_every: int, dense_params: int = 0,
               name: str = 'gst'):
    circulant.check_block_size(block_size)
    if not 0.0 < s_shift <= 1.0:
      raise ValueError(f's_shift must be in (0, 1], got {s_shift!r}')
    if transform not in TRANSFORM_NAMES:
      raise ValueError(f'GST transform must be one of {TRANSFORM_NAMES}, '
                       f'got {transform!r}')
    if transform != 'none' and block_size != 4:
      raise ValueError(f'GST transform {transform} moves between B=4 and B=2 '
                       f'forms: it needs block size 4, got {block_size}')
    super().__init__(layers, granularity, update_every, dense_params, name)
    self._s_shift = s_shift
    self._ladder = TRANSFORMS.get(transform)
    self.clock = schedules.RewardAwareClock(
        schedules.CubicSchedule(s_init, s_final, begin_step, end_step),
        reward_window, reward_delta, step_back, patience, reward_reference)
    self.transforms = tf.Variable(0, dtype=tf.int64, trainable=False,
                                  name='transforms')
    self.last_transform_shift = tf.Variable(
        0.0, dtype=tf.float64, trainable=False, name='last_transform_shift')
    start_block, start_friendly = (self._ladder[0] if self._ladder
                                   else (block_size, False))
    for layer in self.layers:
      layer.to_circulant(4 if start_friendly else start_block)
      if start_friendly:
        layer.set_block_size(start_block, friendly=True)

  def target_sparsity(self) -> float:
    return self.clock.sparsity()

  def observe_return(self, value: float) -> None:
    # Before the schedule starts nothing is pruned yet, and an untrained
    # policy's return (on HalfCheetah: ~0, better than early learning's)
    # must not become the bar that later returns are held to.
    if int(self.clock.tick.numpy()) < self.clock.schedule.begin_step:
      return
    self.clock.observe(value)

  def _advance(self, steps: int) -> None:
    self.clock.advance(steps)

  def _starts_pruning(self, layer, target: float) -> bool:
    if self._ladder is None:
      return target >= self._s_shift * layer.pattern_cr - _TOLERANCE
    _, (rung_block, rung_friendly), group = self._ladder
    on_rung = (layer.block_size, layer.friendly) == (rung_block,
                                                     rung_friendly)
    if not on_rung:
      if target >= self._s_shift * layer.pattern_cr - _TOLERANCE:
        self._transform(layer, rung_block, rung_friendly)
      return False
    if target < layer.pattern_cr - _TOLERANCE:
      return False
    layer.set_block_size(group)  # Lossless: every rung is a form of B=group.
    return True

  def _transform(self, layer, block_size: int, friendly: bool) -> None:
    shift = layer.set_block_size(block_size, friendly=friendly)
    self.transforms.assign_add(1)
    self.last_transform_shift.assign(shift)
    logging.info('GST transform of %s to B=%d%s at step %d: weight shift %.4f',
                 layer.name, block_size, ' (block4-friendly)' if friendly
                 else '', int(self.learner_step.numpy()), shift)

  def report(self) -> dict:
    row = super().report()
    row['clock_paused'] = self.clock.paused
    row['transforms'] = int(self.transforms.numpy())
    row['last_transform_shift'] = float(self.last_transform_shift.numpy())
    return row


CONTROLLERS = {
    'none': NoCompression,
    'prune': IterativePruningController,
    'gst': GstController,
    'static': sparse_training.StaticSparseController,
    'rigl': sparse_training.RigLController,
}


def needs_gradients(kind: str) -> bool:
  """Whether compression `kind` reads the learner's dense gradients."""
  return CONTROLLERS[kind].needs_gradients


def _knobs(cls) -> set:
  params = inspect.signature(cls.__init__).parameters
  return set(params) - {'self', 'layers'}


def make_controller(kind: str, layers: Sequence[layers_lib.CompressibleLinear],
                    **knobs) -> CompressionController:
  """Builds a controller by name; knobs another kind uses are ignored, and
  knobs not given take CompressionConfig's defaults (their one source).

  Ignoring them lets one set of flags drive all three kinds; a knob no kind
  knows, or a bad value for a knob this kind uses, raises ValueError.
  """
  if kind not in CONTROLLERS:
    raise ValueError(f'compression kind must be one of {sorted(CONTROLLERS)}, '
                     f'got {kind!r}')
  known = set().union(*(_knobs(cls) for cls in CONTROLLERS.values()))
  unknown = set(knobs) - known
  if unknown:
    raise ValueError(f'unknown compression knobs {sorted(unknown)}; '
                     f'known: {sorted(known)}')
  cls = CONTROLLERS[kind]
  used = _knobs(cls)
  knobs = {**config_lib.CompressionConfig().controller_knobs(), **knobs}
  return cls(layers, **{k: v for k, v in knobs.items() if k in used})

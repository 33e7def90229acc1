"""Sparse training from scratch: static sparsity and RigL (Evci et al. 2020).

Both start every compressed layer at a random mask of the final sparsity,
spread over the layers by Erdős-Rényi-Kernel densities (`erk_densities`), so
their CR is s_final from step 0. Static keeps that mask. RigL, every
`topology_every` learner steps before `end_step`, drops the active units
(single weights, or BxB groups with granularity='block') of smallest
magnitude and regrows as many inactive ones where the dense gradient is
largest, new ones at zero weight. The fraction moved decays from `drop_fraction` to
0 at end_step (schedules.cosine_drop_fraction).

The dense gradient: a masked kernel's zeros multiply their inputs like any
weight, so the learner's gradient for the kernel variable is already the
dense one; the learner hands it over in-graph (`record_gradients`) and the
controller keeps the latest per layer. Adam's moments of a regrown weight
are kept (its zero weight has been getting gradients all along).
"""
from typing import List, Sequence

import numpy as np
import tensorflow as tf

from quarl.compression import circulant
from quarl.compression import layers as layers_lib
from quarl.compression import masks
from quarl.compression import schedules
from quarl.compression.base import CompressionController


def erk_densities(shapes: Sequence[Sequence[int]],
                  sparsity: float) -> List[float]:
  """Per-layer densities, proportional to sum(shape) / prod(shape) (for a
  dense [in, out] kernel: (in + out) / (in * out)), whose weighted mean is
  1 - sparsity; a layer the rule would make denser than 1 is held dense and
  the others are scaled again."""
  masks.check_sparsity(sparsity)
  sizes = [float(np.prod(shape)) for shape in shapes]
  raw = [sum(shape) / size for shape, size in zip(shapes, sizes)]
  dense = set()
  while True:
    rest = [i for i in range(len(shapes)) if i not in dense]
    if not rest:
      break
    budget = (1.0 - sparsity) * sum(sizes) - sum(sizes[i] for i in dense)
    scale = budget / sum(raw[i] * sizes[i] for i in rest)
    over = [i for i in rest if scale * raw[i] > 1.0]
    if not over:
      break
    dense.update(over)
  return [1.0 if i in dense else scale * raw[i] for i in range(len(shapes))]


class StaticSparseController(CompressionController):
  """A random ERK mask at s_final from step 0, never changed."""

  def __init__(self, layers: Sequence[layers_lib.CompressibleLinear], *,
               s_final: float, block_size: int, granularity: str,
               update_every: int, dense_params: int = 0,
               name: str = 'static_sparse'):
    super().__init__(layers, granularity, update_every, dense_params, name)
    masks.check_sparsity(s_final, 's_final')
    circulant.check_block_size(block_size)
    self._s_final = s_final
    self._block_size = block_size
    densities = erk_densities([layer.w.shape for layer in self.layers],
                              s_final)
    for layer, density in zip(self.layers, densities):
      layer.set_block_size(block_size)
      scores = tf.random.uniform(layer.kernel_matrix().shape).numpy()
      layer.set_mask(masks.make_mask(scores, 1.0 - density, block_size,
                                     granularity))

  def target_sparsity(self) -> float:
    return self._s_final

  def _update_layers(self, previous: int, learner_step: int) -> None:
    """The mask chosen at step 0 is the mask."""


class RigLController(StaticSparseController):
  """Static's start; then drop by magnitude, regrow by dense gradient."""

  needs_gradients = True

  def __init__(self, layers: Sequence[layers_lib.CompressibleLinear], *,
               s_final: float, block_size: int, granularity: str,
               update_every: int, topology_every: int, drop_fraction: float,
               end_step: int, dense_params: int = 0, name: str = 'rigl'):
    if topology_every < 1 or topology_every % update_every:
      raise ValueError(f'topology_every ({topology_every}) must be a positive '
                       f'multiple of update_every ({update_every})')
    if not 0.0 < drop_fraction <= 1.0:
      raise ValueError(f'drop_fraction must be in (0, 1], got '
                       f'{drop_fraction!r}')
    if end_step < 1:
      raise ValueError(f'end_step must be >= 1, got {end_step}')
    super().__init__(layers, s_final=s_final, block_size=block_size,
                     granularity=granularity, update_every=update_every,
                     dense_params=dense_params, name=name)
    self._topology_every = topology_every
    self._drop_fraction = drop_fraction
    self._end_step = end_step
    self._gradients = [tf.Variable(tf.zeros_like(layer.w), trainable=False,
                                   name='dense_gradient')
                       for layer in self.layers]
    self.mask_updates = tf.Variable(0, dtype=tf.int64, trainable=False,
                                    name='mask_updates')
    self.last_moved = tf.Variable(0, dtype=tf.int64, trainable=False,
                                  name='last_moved')

  def record_gradients(self, gradients, variables) -> None:
    kept = {layer.w.ref(): store
            for layer, store in zip(self.layers, self._gradients)}
    for gradient, variable in zip(gradients, variables):
      store = kept.get(variable.ref())
      if store is not None and gradient is not None:
        store.assign(gradient)

  def drop_fraction(self, step: int) -> float:
    return schedules.cosine_drop_fraction(step, self._drop_fraction,
                                          self._end_step)

  def _update_layers(self, previous: int, learner_step: int) -> None:
    """A mask update at each multiple of topology_every crossed (the last
    one: syncs land on every one of them) in (0, end_step)."""
    every = self._topology_every
    step = learner_step // every * every
    if step <= previous or not 0 < step < self._end_step:
      return
    fraction = self.drop_fraction(step)
    moved = sum(self._move(layer, store.numpy(), fraction)
                for layer, store in zip(self.layers, self._gradients))
    self.mask_updates.assign_add(1)
    self.last_moved.assign(moved)

  def _move(self, layer, gradient: np.ndarray, fraction: float) -> int:
    """Drops and regrows `fraction` of the layer's active units; returns
    how many units are new."""
    weights = layer.kernel_matrix().numpy()
    active = self._unit_scores(layer.matrix_view(layer.mask)) > 0
    weight_scores = self._unit_scores(weights)
    gradient_scores = self._unit_scores(layer.matrix_view(gradient))
    on = np.flatnonzero(active)
    count = int(fraction * on.size)
    if count == 0:
      return 0
    dropped = on[np.argsort(weight_scores[on], kind='stable')[:count]]
    kept = active.copy()
    kept[dropped] = False
    off = np.flatnonzero(~kept)
    grown = off[np.argsort(-gradient_scores[off], kind='stable')[:count]]
    chosen = kept.copy()
    chosen[grown] = True
    # New units start at 0; a unit dropped and regrown at once keeps its
    # weight (rigl's default, reinit_when_same=False).
    layer.set_kernel_matrix(weights * self._expand(chosen & active,
                                                   weights.shape))
    layer.set_mask(self._expand(chosen, weights.shape))
    return int(np.count_nonzero(chosen & ~active))

  def _unit_scores(self, matrix) -> np.ndarray:
    """|value| per weight, or L2 norm per BxB group, flattened."""
    matrix = np.asarray(matrix)
    if self._granularity == 'element':
      return np.abs(matrix).ravel()
    return masks.block_norms(matrix, self._block_size).ravel()

  def _expand(self, units: np.ndarray, shape) -> np.ndarray:
    if self._granularity == 'element':
      return units.reshape(shape).astype(np.float32)
    rows, cols = circulant.grid_shape(shape, self._block_size)
    return masks.expand_groups(units.reshape(rows, cols), shape,
                               self._block_size)

  def report(self) -> dict:
    row = super().report()
    row['drop_fraction'] = self.drop_fraction(int(self.learner_step.numpy()))
    row['mask_updates'] = int(self.mask_updates.numpy())
    row['last_moved'] = int(self.last_moved.numpy())
    return row


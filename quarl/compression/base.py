"""The interface every compression controller shares, and its CR accounting.

Two halves serve every method. `constrain()` re-imposes every layer's
structure; it is traced into the learner's compiled step, so it runs after
every optimizer update with no host work. `sync(learner_step)` is the host
half, called every `update_every` learner steps: account CR for the steps
since the last sync, advance the method's clock, move layers into the pruned
phase when the method says so, and refresh masks. Structure changes only in
sync, so the CR that held between two syncs is exact for every step between.

CR accounting: a layer's CR is 1 - stored/kernel entries;
compressed CR aggregates layers by kernel size; network CR also counts
`dense_params` (first/last layers, biases) as stored; average CR is the mean
of the per-step compressed CR over all learner steps seen.
"""
import abc
import collections
from typing import Optional, Sequence

import tensorflow as tf

from quarl.compression import layers as layers_lib
from quarl.compression import masks


class CompressionController(tf.Module, metaclass=abc.ABCMeta):
  """Shared step loop, CR accounting and report; subclasses set the target."""

  def __init__(self, layers: Sequence[layers_lib.CompressibleLinear],
               granularity: str = 'block', update_every: int = 100,
               dense_params: int = 0, name: Optional[str] = None):
    super().__init__(name=name)
    if granularity not in masks.GRANULARITIES:
      raise ValueError(f'granularity must be one of {masks.GRANULARITIES}, '
                       f'got {granularity!r}')
    if update_every < 1:
      raise ValueError(f'update_every must be >= 1, got {update_every}')
    self.layers = tuple(layers)
    self._granularity = granularity
    self._update_every = update_every
    self._dense_params = dense_params
    self.learner_step = tf.Variable(0, dtype=tf.int64, trainable=False,
                                    name='learner_step')
    self._cr_sum = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                               name='cr_sum')
    self._steps_seen = tf.Variable(0, dtype=tf.int64, trainable=False,
                                   name='steps_seen')

  # False for the dense baseline: its constraint is not traced at all.
  compresses = True
  # True where the method reads the dense gradient of its layers' kernels
  # (RigL's regrowth): the learner then hands them to `record_gradients`.
  needs_gradients = False

  @property
  def update_every(self) -> int:
    return self._update_every

  @abc.abstractmethod
  def target_sparsity(self) -> float:
    """The sparsity the method asks of pruned layers right now."""

  def record_gradients(self, gradients, variables) -> None:
    """In-graph: keeps the gradients of this controller's kernels among
    (gradients, variables); only methods that need gradients use them."""
    del gradients, variables

  def observe_return(self, value: float) -> None:
    """Feeds an evaluation return; only reward-aware methods use it."""

  def _advance(self, steps: int) -> None:
    """Moves the method's clock by `steps` learner steps."""

  def _starts_pruning(self, layer, target: float) -> bool:
    """Whether a not-yet-pruned layer enters the pruned phase at `target`."""
    return False

  def constrain(self) -> None:
    """Re-imposes every layer's structure; safe to trace (tf.function/XLA):
    each layer picks its phase's branch from variable values."""
    if self.compresses:
      for layer in self.layers:
        layer.apply_constraint()

  def sync(self, learner_step: int) -> None:
    """Host bookkeeping up to `learner_step` (which must not decrease).

    The steps since the last sync are accounted at the CR that held during
    them and advance the clock; then layers hand over and masks refresh.
    """
    learner_step = int(learner_step)
    previous = int(self.learner_step.numpy())
    steps = max(learner_step - previous, 0)
    total, stored = self._totals()
    self._cr_sum.assign_add(steps * (1.0 - stored / total if total else 0.0))
    self._steps_seen.assign_add(steps)
    self.learner_step.assign(max(learner_step, previous))
    self._advance(steps)
    self._update_layers(previous, learner_step)

  def _update_layers(self, previous: int, learner_step: int) -> None:
    """Hand-over at the new target; masks refresh every `update_every` steps."""
    every = self._update_every
    refresh = learner_step // every != previous // every
    target = self.target_sparsity()
    for layer in self.layers:
      if layer.phase == layers_lib.SPARSE:
        enter = refresh
      else:
        enter = self._starts_pruning(layer, target)
      if enter:
        layer.to_sparse(target, self._granularity)

  def after_optimizer_step(self, learner_step: int) -> None:
    """Both halves at once, eagerly: for callers outside a compiled step."""
    self.constrain()
    self.sync(learner_step)

  def _totals(self):
    return (sum(layer.num_params() for layer in self.layers),
            sum(layer.stored_params() for layer in self.layers))

  def average_cr(self) -> float:
    seen = int(self._steps_seen.numpy())
    return float(self._cr_sum.numpy()) / seen if seen else 0.0

  def report(self) -> dict:
    """Flat dict (one compression.csv row): step, phase, targets and CRs."""
    total, stored = self._totals()
    phases = {layer.phase for layer in self.layers}
    row = {
        'learner_step': int(self.learner_step.numpy()),
        'phase': phases.pop() if len(phases) == 1 else (
            'mixed' if phases else layers_lib.DENSE),
        'target_sparsity': self.target_sparsity(),
        'compressed_cr': 1.0 - stored / total if total else 0.0,
        'network_cr': (total - stored) / (total + self._dense_params)
                      if total + self._dense_params else 0.0,
        'average_cr': self.average_cr(),
    }
    for name, layer in zip(_unique_names(self.layers), self.layers):
      row[f'cr/{name}'] = layer.compression_ratio()
    return row


def _unique_names(layers) -> list:
  """Name scopes, suffixed _1, _2... on repeats (eager Sonnet never does)."""
  counts = collections.Counter()
  names = []
  for layer in layers:
    base = layer.name_scope.name.rstrip('/') or layer.name
    names.append(f'{base}_{counts[base]}' if counts[base] else base)
    counts[base] += 1
  return names

"""Compiled learner steps: sample fetched outside, one jit-compiled update.

Acme's TF learners call `next(iterator)` inside their tf.function, which XLA
cannot compile. Here the Reverb sample is fetched eagerly and handed to one
compiled update that also re-imposes the compression constraint (GST/prune),
so a learner step is one device call. Counting and logging leave the
per-step path: they happen every `report_every_s` seconds.

Acme's own step bodies are reused as they are (their losses and target
updates): `SampleFeed` stands in for the learner's iterator while the update
traces, so `next(self._iterator)` inside Acme's step returns the argument.
"""
import abc
import time
from typing import Any, Callable, Dict, Optional

import numpy as np
import tensorflow as tf
from tensorflow.python.autograph.core import config as autograph_config  # pylint: disable=g-direct-tensorflow-import

COMPILE_MODES = ('xla', 'graph')
# What --learner_compile=auto picks per observation kind. On CPU, XLA
# computes the Nature CNN's gradients slower than a graph (1.18x the time of
# one minibatch step here) and, inside a while loop of steps as PPO's update
# runs them, 72x slower; on flat vectors it is the faster (0.72x), as it
# saves a small update's per-op overhead (`python -m
# benchmarks.learner_compile`).
AUTO_COMPILE_MODE = {'pixel': 'graph', 'vector': 'xla'}
REPORT_EVERY_S = 1.0

# AutoGraph leaves Sonnet's code as it is: its modules branch on Python
# values only, and where Sonnet wants AutoGraph (its optimizers) it converts
# its own code. Converting them was about half of a learner's trace, on the
# path to the first step (`python -m benchmarks.learner_trace`).
autograph_config.CONVERSION_RULES = (
    (autograph_config.DoNotConvert('sonnet'),) +
    autograph_config.CONVERSION_RULES)


class NonFiniteLossError(FloatingPointError):
  """A reported loss is NaN/Inf: every later step would train on garbage."""


class SampleFeed:
  """An iterator whose next() is the sample the compiled update was given."""

  def __init__(self):
    self.sample = None

  def __iter__(self):
    return self

  def __next__(self):
    return self.sample


class CompiledLearnerMixin(abc.ABC):
  """Shared step loop around a learner's `_compiled_update(sample)`.

  `constrain` (a compression controller's in-graph constraint) and
  `record_gradients` (its in-graph gradient sink, for methods that read the
  dense gradient) may be set until the first step, when the update is
  traced; learners that call `_record_gradients` say so in their agent's
  `records_gradients`.
  """

  def _init_compiled(self, samples, compile_mode: str, counter, logger,
                     report_every_s: float = REPORT_EVERY_S):
    if compile_mode not in COMPILE_MODES:
      raise ValueError(f'learner compile mode must be one of {COMPILE_MODES},'
                       f' got {compile_mode!r}')
    self.constrain: Optional[Callable[[], None]] = None
    self.record_gradients: Optional[Callable[[Any, Any], None]] = None
    self._samples = samples
    self._compile_mode = compile_mode
    self._update = tf.function(self._compiled_update,
                               jit_compile=compile_mode == 'xla')
    self._report_counter, self._report_logger = counter, logger
    self._report_every_s = report_every_s
    self._unreported_steps = 0
    self._last_report = None
    self._finite_fetches = set()

  @abc.abstractmethod
  def _compiled_update(self, sample) -> Dict[str, tf.Tensor]:
    """The whole step, traced once: the optimizer updates, with
    `_apply_constraint()` after them (and before any target network
    averages the online weights)."""

  def compile_ahead(self) -> bool:
    """Traces and compiles the update on a batch of ones shaped like a
    sample, then puts back every variable the update touched.

    Called while the replay fills, it takes the compile (seconds of CPU) off
    the path to the first learner step, which then starts at once. Returns
    False, doing nothing, when the sample's shapes are not known ahead.
    """
    spec = getattr(self._samples, 'element_spec', None)
    if spec is None or not all(s.shape.is_fully_defined()
                               for s in tf.nest.flatten(spec)):
      return False
    # Ones, not zeros: the weights can be read before they are put back, and
    # a prioritized sample with zero probabilities has infinite importance
    # weights (DQN's update then made them NaN).
    stand_in = tf.nest.map_structure(lambda s: tf.ones(s.shape, s.dtype),
                                     spec)
    # Tracing creates the optimizers' slots; the update may touch only the
    # variables it captures, so those are what is saved and put back.
    touched = self._update.get_concrete_function(stand_in).variables
    saved = [np.array(variable.numpy(), copy=True) for variable in touched]
    self._update(stand_in)
    for variable, value in zip(touched, saved):
      variable.assign(value)
    return True

  def _apply_constraint(self) -> None:
    if self.constrain is not None:
      self.constrain()

  def _record_gradients(self, gradients, variables) -> None:
    if self.record_gradients is not None:
      self.record_gradients(gradients, variables)

  def _after_update(self, fetches: Dict[str, Any]) -> Dict[str, Any]:
    """Host work on the fetches (e.g. priorities); returns what to log."""
    return fetches

  def step(self) -> None:
    fetches = self._after_update(self._update(next(self._samples)))
    self._unreported_steps += 1
    now = time.time()
    if self._last_report is None:  # Time before the first step isn't counted.
      self._last_report = now
    if now - self._last_report >= self._report_every_s:
      self.flush_counts(fetches, now)

  def flush_counts(self, fetches: Optional[Dict[str, Any]] = None,
                   now: Optional[float] = None) -> None:
    """Adds the steps made since the last report to the counter; logs."""
    now = now or time.time()
    if not self._unreported_steps:
      return
    counts = self._report_counter.increment(
        steps=self._unreported_steps,
        walltime=now - (self._last_report or now))
    self._unreported_steps, self._last_report = 0, now
    if fetches is not None:
      self._report_logger.write({**fetches, **counts})
      self._check_finite(fetches, counts)

  def _check_finite(self, fetches: Dict[str, Any],
                    counts: Dict[str, Any]) -> None:
    """A loss that was finite and no longer is: the learner diverged (a
    loss not computed yet, e.g. TD3's before its first policy step, may be
    NaN)."""
    for name, value in fetches.items():
      array = np.asarray(value)
      if array.dtype.kind != 'f':
        continue
      if np.all(np.isfinite(array)):
        self._finite_fetches.add(name)
      elif name in self._finite_fetches:
        raise NonFiniteLossError(
            f'{name} is not finite ({array.ravel()[:3]}) at learner step '
            f'{counts.get("learner_steps")}')

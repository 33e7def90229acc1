"""Acme's D4PG learner with a compiled step (see agents/compiled.py).

The maths is Acme's `_step` as it is (categorical critic loss, DPG through
the distributional critic, hard target copies every target_update_period
steps); only where the sample comes from and how the step compiles change.
"""
from acme.agents.tf.d4pg import learning

from agents import compiled


class D4PGLearner(compiled.CompiledLearnerMixin, learning.D4PGLearner):
  """Fetches the sample eagerly; runs Acme's step body + constraint compiled."""

  def __init__(self, *, dataset_iterator, compile_mode: str = 'xla',
               **kwargs):
    feed = compiled.SampleFeed()
    super().__init__(dataset_iterator=feed, **kwargs)
    self._init_compiled(dataset_iterator, compile_mode, self._counter,
                        self._logger)

  def _compiled_update(self, sample):
    self._iterator.sample = sample
    fetches = learning.D4PGLearner._step.python_function(self)
    self._apply_constraint()
    return fetches

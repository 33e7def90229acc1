"""Acme's DQN learner with a compiled step (see agents/compiled.py).

The maths is Acme's `_step` as it is (double Q-learning, Huber loss,
importance weights, target copies); priorities still go back to Reverb after
every step, as prioritised replay needs.
"""
from typing import List

import numpy as np
from acme.adders import reverb as reverb_adders
from acme.agents.tf.dqn import learning
from acme.tf import utils as tf2_utils

from agents import compiled


class DQNLearner(compiled.CompiledLearnerMixin, learning.DQNLearner):
  """Fetches the sample eagerly; runs Acme's step body + constraint compiled.

  Serves all Q-network variables as 'policy': Acme's serves only the
  trainable ones (and ignores `names`); a GST layer also holds non-trainable
  compression state, so that list would not line up with the exported
  network's `.variables`, which the quantizer and the TF actors fill in order.
  """

  def __init__(self, *, dataset, compile_mode: str = 'xla', **kwargs):
    super().__init__(dataset=dataset, **kwargs)
    samples, self._iterator = self._iterator, compiled.SampleFeed()
    self._init_compiled(samples, compile_mode, self._counter, self._logger)

  def _compiled_update(self, sample):
    self._iterator.sample = sample
    fetches = learning.DQNLearner._step.python_function(self)
    self._apply_constraint()
    return fetches

  def _after_update(self, fetches):
    keys, priorities = fetches.pop('keys'), fetches.pop('priorities')
    if self._replay_client:
      self._replay_client.mutate_priorities(
          table=reverb_adders.DEFAULT_PRIORITY_TABLE,
          updates=dict(zip(keys.numpy(), priorities.numpy())))
    return fetches

  def get_variables(self, names: List[str]) -> List[List[np.ndarray]]:
    network = self.state['network']
    return [tf2_utils.to_numpy(network.variables) for _ in names]

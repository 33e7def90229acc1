"""A stand-in for Football behind pipe_server.py: gym's 4-tuple step API,
a 115-float observation and 19 actions like `simple115v2`, and the faults
an out-of-process environment can have. Imports only NumPy, as the other
Python may have nothing else."""
import os
import time
from types import SimpleNamespace

import numpy as np

EPISODE_LENGTH = 10


class StandinFootball:
  """Observation: the step count and the last action, repeated; reward 1
  for action 3; the episode ends (done) after EPISODE_LENGTH steps."""

  def __init__(self, seed=0, exit_at_step=None, hang_at_step=None,
               raise_at_step=None, chatty=False):
    self.observation_space = SimpleNamespace(shape=(115,), dtype=np.float32)
    self.action_space = SimpleNamespace(n=19)
    self._seed = seed
    self._faults = dict(exit=exit_at_step, hang=hang_at_step,
                        raise_=raise_at_step)
    self._chatty = chatty
    self._steps = self._total_steps = 0

  def _observation(self, action):
    return np.full((115,), self._seed + self._steps + action / 100.0,
                   np.float32)

  def reset(self):
    if self._chatty:
      print('stand-in: reset, printed on stdout')
    self._steps = 0
    return self._observation(0)

  def step(self, action):
    self._total_steps += 1
    if self._total_steps == self._faults['exit']:
      os._exit(3)  # pylint: disable=protected-access
    if self._total_steps == self._faults['hang']:
      time.sleep(3600)
    if self._total_steps == self._faults['raise_']:
      raise RuntimeError('the stand-in engine failed')
    if self._chatty:
      print(f'stand-in: step {self._steps}, printed on stdout')
    self._steps += 1
    return (self._observation(action), float(action == 3),
            self._steps >= EPISODE_LENGTH, {})

  def close(self):
    pass


def make(**kwargs):
  return StandinFootball(**kwargs)

"""Non-finite data from an environment is refused at the door.

One NaN observation or reward that reaches the replay, the calibration set
or GST's reward-aware clock spoils every later learner step, publish or
pause, and a resume would restore it from the replay checkpoint. So every
environment a node steps (actors, the evaluator, the quantizer's rollout)
is wrapped: the first non-finite value stops the run as failed, with one
line naming the env, the node and the step, before the value is returned to
anyone.
"""
import numpy as np
import tree
from acme.wrappers import base as wrapper_base

from launch.runtime import stop


class NonFiniteDataError(RuntimeError):
  """An environment returned NaN or Inf."""


class FiniteOnly(wrapper_base.EnvironmentWrapper):
  """`environment`, whose every reset and step is checked; a non-finite
  observation or reward writes the run's STOP (`failed: ...`, so the
  launcher restarts nothing) and raises."""

  def __init__(self, environment, env_name: str, node_name: str,
               run_dir: str):
    super().__init__(environment)
    self._env_name = env_name
    self._node_name = node_name
    self._run_dir = run_dir
    self._steps = 0

  def reset(self):
    return self._checked(self._environment.reset())

  def step(self, action):
    self._steps += 1
    return self._checked(self._environment.step(action))

  def _checked(self, timestep):
    for what, value in (('observation', timestep.observation),
                        ('reward', timestep.reward)):
      if value is not None and not all_finite(value):
        message = (f'env {self._env_name} returned a non-finite {what} to '
                   f'{self._node_name} at step {self._steps}')
        stop.request(self._run_dir, f'failed: {message}')
        raise NonFiniteDataError(message)
    return timestep


def all_finite(value) -> bool:
  """Every float in `value` (an array, a number or a nest of them) is
  finite; integer data (Atari frames) always is."""
  for leaf in tree.flatten(value):
    array = np.asarray(leaf)
    if array.dtype.kind in 'fc' and not np.all(np.isfinite(array)):
      return False
  return True

"""Uniform-random actions for an actor's first steps (TD3's warm-up).

A deterministic policy starting near zero, plus small noise, shows the critic
only actions near zero; uniform actions over the whole box first give it
data to learn from. A wrapper, so LiteRT and stock TF actors share it.
"""
import numpy as np
from acme import core
from acme import specs

from quarl import envs


class RandomWarmupActor(core.Actor):
  """Acts uniformly at random for `steps` actions, then delegates."""

  def __init__(self, actor: core.Actor, action_spec: specs.BoundedArray,
               steps: int, rng: np.random.Generator):
    self._actor = actor
    self._spec = action_spec
    self._remaining = steps
    self._rng = rng

  def select_action(self, observation):
    if self._remaining > 0:
      self._remaining -= 1
      return envs.random_action(self._spec, self._rng)
    return self._actor.select_action(observation)

  def observe_first(self, timestep):
    self._actor.observe_first(timestep)

  def observe(self, action, next_timestep):
    self._actor.observe(action, next_timestep)

  def update(self, wait: bool = False):
    self._actor.update(wait)

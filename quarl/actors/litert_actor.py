"""An Acme actor that explores with the quantized policy through LiteRT."""
from typing import Any, Callable, Optional

import dm_env
import numpy as np
from acme import adders
from acme import core

from quarl.actors import exploration
from quarl.actors.model_refresher import ModelRefresher


class LiteRTActor(core.Actor):
  """Feed-forward actor: LiteRT model output -> behaviour -> action.

  `behaviour` turns the model's output into the action taken: Gaussian noise
  around a deterministic action (D4PG/TD3), epsilon-greedy over Q-values (DQN),
  or the greedy choice for evaluation; a categorical choice returns (action,
  extras), and the extras go to the adder beside the action (on-policy
  agents). Model refresh happens on the refresher's thread, so `update()`
  has nothing to do.
  """

  def __init__(self, refresher: ModelRefresher,
               behaviour: Callable[[np.ndarray], Any],
               adder: Optional[adders.Adder] = None):
    self._refresher = refresher
    self._behaviour = behaviour
    self._adder = adder
    self._extras = ()

  @property
  def policy_version(self) -> int:
    return self._refresher.version

  def select_action(self, observation: np.ndarray) -> np.ndarray:
    action, self._extras = exploration.split_decision(
        self._behaviour(self._refresher.policy(observation)))
    return action

  def observe_first(self, timestep: dm_env.TimeStep) -> None:
    if self._adder:
      self._adder.add_first(timestep)

  def observe(self, action: np.ndarray, next_timestep: dm_env.TimeStep) -> None:
    if self._adder:
      self._adder.add(action, next_timestep, self._extras)

  def update(self, wait: bool = False) -> None:
    del wait  # The refresher thread keeps the model current.

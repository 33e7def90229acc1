"""Acme's TF actor acting through an agent's behaviour(): the fp32_tf
baseline, which differs from the LiteRT actors in precision only."""
import numpy as np
from acme.agents.tf import actors as tf_actors

from quarl.actors import exploration as exploration_lib


class TFBehaviourActor(tf_actors.FeedForwardActor):
  """Acme's TF actor on the exported model, acting through behaviour().

  A behaviour that returns (action, extras) has the extras added beside the
  action (quarl.actors.exploration.split_decision).
  """

  def __init__(self, policy, adder, variable_client, behaviour):
    super().__init__(policy, adder, variable_client)
    self._behaviour = behaviour
    self._extras = ()

  def select_action(self, observation: np.ndarray) -> np.ndarray:
    action, self._extras = exploration_lib.split_decision(
        self._behaviour(super().select_action(observation)))
    return action

  def observe(self, action: np.ndarray, next_timestep) -> None:
    if self._adder:
      self._adder.add(action, next_timestep, self._extras)

"""Frames -> policy logits and state value over one Nature-CNN torso."""
from typing import Sequence, Tuple

import sonnet as snt
import tensorflow as tf

from quarl import compression


class ActorCriticNetwork(snt.Module):
  """OpenAI baselines' Atari A2C/PPO network: one Nature-CNN torso (its
  compressible conv and dense layers are GST's scope), a dense policy head
  and a dense value head.

  `policy` (obs -> logits) shares the torso and is what actors run.
  """

  def __init__(self, observation_shape: Sequence[int], num_actions: int,
               name: str = 'actor_critic'):
    super().__init__(name=name)
    self.torso = compression.NatureCNNTorso(observation_shape)
    # A small policy head starts near the uniform policy (maximum entropy),
    # as baselines' orthogonal(0.01) initialisation does.
    self._policy_head = snt.Linear(
        num_actions, w_init=snt.initializers.Orthogonal(0.01),
        name='policy_head')
    self.policy = snt.Sequential([self.torso, self._policy_head])
    self._value_head = snt.Linear(1, name='value_head')

  def __call__(self, observations: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    features = self.torso(observations)
    logits = self._policy_head(features)
    return logits, tf.squeeze(self._value_head(features), axis=-1)

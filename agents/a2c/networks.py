"""Observations -> policy logits and state value over one shared torso: the
Nature CNN for frames, an MLP for flat vectors (Football's simple115v2)."""
from typing import Sequence, Tuple

import sonnet as snt
import tensorflow as tf

from quarl import compression


class ActorCriticNetwork(snt.Module):
  """OpenAI baselines' A2C/PPO network: one torso (its compressible layers
  are GST's scope), a dense policy head and a dense value head. Frames
  ([H, W, C]) get the Nature CNN; flat vectors an MLP of `mlp_layers` with
  its first layer dense, as GST keeps input layers.

  `policy` (obs -> logits) shares the torso and is what actors run.
  """

  def __init__(self, observation_shape: Sequence[int], num_actions: int,
               mlp_layers: Sequence[int], name: str = 'actor_critic'):
    super().__init__(name=name)
    if len(observation_shape) == 3:
      self.torso = compression.NatureCNNTorso(observation_shape)
    else:
      self.torso = compression.make_compressible_mlp(
          mlp_layers, activate_final=True, dense_last=False, name='mlp_torso')
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

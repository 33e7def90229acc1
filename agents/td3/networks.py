"""TD3 networks: D4PG's deterministic tanh policy and scalar twin critics."""
from typing import Sequence

import sonnet as snt
import tensorflow as tf
from acme.tf import networks as acme_networks

from agents.d4pg.networks import compressible_layers
from agents.d4pg.networks import create_variables
from agents.d4pg.networks import make_policy_network
from quarl import compression

__all__ = ['compressible_layers', 'create_variables', 'make_critic_network',
           'make_policy_network']


def make_critic_network(layers: Sequence[int]) -> snt.Module:
  """Q(obs, action): concatenated inputs, ReLU torso, one linear output.

  As in the policy, the torso's input layer and the head stay dense and the
  hidden->hidden layers are compressible.
  """
  return snt.Sequential([
      acme_networks.CriticMultiplexer(),
      compression.make_compressible_mlp(
          list(layers), activate_final=True, dense_last=False,
          name='critic_torso'),
      snt.Linear(1, name='q_value'),
      lambda q: tf.squeeze(q, axis=-1),
  ])

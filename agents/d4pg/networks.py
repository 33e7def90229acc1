"""D4PG networks: a deterministic tanh policy and a distributional critic."""
from typing import Sequence

import sonnet as snt
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks

from quarl import compression


class DeterministicPolicy(snt.Module):
  """obs -> tanh(body(obs)) rescaled to the action spec.

  `body` (a ReLU MLP torso whose hidden->hidden layers GST may compress, and
  a linear action head) ends before the squash; `unit_action` is what
  actors' models compute. The rescale stays out of those models: when the
  policy saturates, its int8 ranges collapse and LiteRT aborts on them.
  No LayerNorm: it quantizes poorly to full int8. The torso's input layer and
  the action head stay dense, as GST prescribes.
  """

  def __init__(self, action_spec: specs.BoundedArray, layers: Sequence[int],
               name: str = 'policy'):
    super().__init__(name=name)
    self.body = snt.Sequential([
        snt.Flatten(),
        compression.make_compressible_mlp(
            list(layers), activate_final=True, dense_last=False,
            name='policy_torso'),
        acme_networks.NearZeroInitializedLinear(int(action_spec.shape[-1])),
    ])
    self._to_spec = acme_networks.TanhToSpec(action_spec)

  def __call__(self, observations: tf.Tensor) -> tf.Tensor:
    return self._to_spec(self.body(observations))

  def unit_action(self, observations: tf.Tensor) -> tf.Tensor:
    """The action before the rescale, in [-1, 1]."""
    return tf.tanh(self.body(observations))


def make_policy_network(action_spec: specs.BoundedArray,
                        layers: Sequence[int]) -> DeterministicPolicy:
  return DeterministicPolicy(action_spec, layers)


def make_critic_network(layers: Sequence[int], vmin: float, vmax: float,
                        num_atoms: int) -> snt.Module:
  return snt.Sequential([
      acme_networks.CriticMultiplexer(),
      compression.make_compressible_mlp(
          list(layers), activate_final=True, dense_last=False,
          name='critic_torso'),
      acme_networks.DiscreteValuedHead(vmin, vmax, num_atoms),
  ])


def compressible_layers(*networks: snt.Module):
  """Every CompressibleLinear inside `networks`, in a stable order."""
  return [layer for network in networks
          for module in network.submodules
          if isinstance(module, compression.CompressibleMLP)
          for layer in module.compressible_layers]


def create_variables(network: snt.Module, *input_specs) -> None:
  """Builds a Sonnet module's variables by calling it on dummy batches."""
  dummies = [tf.zeros((1,) + tuple(s.shape), s.dtype) for s in input_specs]
  network(*dummies)

"""D4PG networks: a deterministic tanh policy and a distributional critic."""
from typing import Sequence

import sonnet as snt
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks

from quarl import compression


class DeterministicPolicy(snt.Module):
  """obs -> tanh(body(obs)) rescaled to the action spec.

  `body` (a torso whose hidden->hidden layers GST may compress, see
  `make_torso`, and a linear action head) ends before the squash;
  `unit_action` is what actors' models compute. The rescale stays out of
  those models: when the policy saturates, its int8 ranges collapse and
  LiteRT aborts on them.
  """

  def __init__(self, action_spec: specs.BoundedArray, layers: Sequence[int],
               layer_norm: bool = False, name: str = 'policy'):
    super().__init__(name=name)
    self.body = snt.Sequential([
        snt.Flatten(),
        make_torso(layers, layer_norm, 'policy_torso'),
        acme_networks.NearZeroInitializedLinear(int(action_spec.shape[-1])),
    ])
    self._to_spec = acme_networks.TanhToSpec(action_spec)

  def __call__(self, observations: tf.Tensor) -> tf.Tensor:
    return self._to_spec(self.body(observations))

  def unit_action(self, observations: tf.Tensor) -> tf.Tensor:
    """The action before the rescale, in [-1, 1]."""
    return tf.tanh(self.body(observations))


def make_torso(layers: Sequence[int], layer_norm: bool,
               name: str) -> snt.Module:
  """ReLU MLP whose input layer stays dense (as GST prescribes) and whose
  hidden->hidden layers are compressible.

  With `layer_norm`, the input layer is followed by LayerNorm and tanh, as in
  Acme's D4PG torso (`LayerNormMLP`): it keeps the critic's inputs in range
  on tasks whose observations are not normalised.
  """
  if not layer_norm:
    return compression.make_compressible_mlp(
        list(layers), activate_final=True, dense_last=False, name=name)
  return snt.Sequential([
      snt.Linear(layers[0], name=f'{name}_input'),
      snt.LayerNorm(axis=-1, create_scale=True, create_offset=True,
                    name=f'{name}_layer_norm'),
      tf.nn.tanh,
      compression.make_compressible_mlp(
          list(layers[1:]), activate_final=True, dense_first=False,
          dense_last=False, name=name),
  ], name=f'{name}_with_layer_norm')


def make_policy_network(action_spec: specs.BoundedArray,
                        layers: Sequence[int],
                        layer_norm: bool = False) -> DeterministicPolicy:
  return DeterministicPolicy(action_spec, layers, layer_norm)


def make_critic_network(layers: Sequence[int], vmin: float, vmax: float,
                        num_atoms: int, layer_norm: bool = True) -> snt.Module:
  return snt.Sequential([
      acme_networks.CriticMultiplexer(),
      make_torso(layers, layer_norm, 'critic_torso'),
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

"""D4PG networks: a deterministic tanh policy and a distributional critic."""
from typing import Sequence

import sonnet as snt
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks

from quarl import compression


def make_policy_network(action_spec: specs.BoundedArray,
                        layers: Sequence[int]) -> snt.Module:
  """ReLU MLP torso whose hidden->hidden layers GST may compress.

  No LayerNorm: it quantizes poorly to full int8. The torso's input layer and
  the action head stay dense, as GST prescribes.
  """
  num_dimensions = int(action_spec.shape[-1])
  return snt.Sequential([
      snt.Flatten(),
      compression.make_compressible_mlp(
          list(layers), activate_final=True, dense_last=False,
          name='policy_torso'),
      acme_networks.NearZeroInitializedLinear(num_dimensions),
      acme_networks.TanhToSpec(action_spec),
  ])


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

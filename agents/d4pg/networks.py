"""D4PG networks: a deterministic tanh policy and a distributional critic."""
from typing import Sequence

import sonnet as snt
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks


def make_policy_network(action_spec: specs.BoundedArray,
                        layers: Sequence[int]) -> snt.Module:
  """Plain ReLU MLP (no LayerNorm: it quantizes poorly to full int8)."""
  num_dimensions = int(action_spec.shape[-1])
  return snt.Sequential([
      snt.Flatten(),
      snt.nets.MLP(list(layers), activate_final=True, name='policy_torso'),
      acme_networks.NearZeroInitializedLinear(num_dimensions),
      acme_networks.TanhToSpec(action_spec),
  ])


def make_critic_network(layers: Sequence[int], vmin: float, vmax: float,
                        num_atoms: int) -> snt.Module:
  return snt.Sequential([
      acme_networks.CriticMultiplexer(),
      acme_networks.LayerNormMLP(list(layers), activate_final=True),
      acme_networks.DiscreteValuedHead(vmin, vmax, num_atoms),
  ])


def create_variables(network: snt.Module, *input_specs) -> None:
  """Builds a Sonnet module's variables by calling it on dummy batches."""
  dummies = [tf.zeros((1,) + tuple(s.shape), s.dtype) for s in input_specs]
  network(*dummies)

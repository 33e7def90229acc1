"""Whether an environment wants discrete or continuous actions, and gives
flat vectors or pixels.

Agents declare the kinds they handle (DQN discrete; D4PG and TD3 continuous;
A2C and PPO pixel frames); checking them up front turns a shape error deep
in a learner into a clear one.
"""
from typing import Union

from acme import specs
import dm_env
import numpy as np


def action_kind(
    environment_or_spec: Union[dm_env.Environment, specs.EnvironmentSpec]
) -> str:
  """'discrete' for a DiscreteArray action, 'continuous' for float bounds."""
  if isinstance(environment_or_spec, specs.EnvironmentSpec):
    action_spec = environment_or_spec.actions
  elif isinstance(environment_or_spec, dm_env.Environment):
    action_spec = environment_or_spec.action_spec()
  else:
    raise TypeError('expected a dm_env.Environment or acme EnvironmentSpec, '
                    f'got {type(environment_or_spec).__name__}')
  if isinstance(action_spec, specs.DiscreteArray):
    return 'discrete'
  if (isinstance(action_spec, specs.BoundedArray) and
      np.issubdtype(action_spec.dtype, np.floating)):
    return 'continuous'
  raise ValueError(f'action spec {action_spec} is neither a DiscreteArray nor '
                   'a float BoundedArray')


def observation_kind(environment: dm_env.Environment) -> str:
  """'pixel' for a uint8 frame stack (ale:), 'vector' for flat float32."""
  spec = environment.observation_spec()
  if len(spec.shape) == 3 and spec.dtype == np.uint8:
    return 'pixel'
  return 'vector'


def random_action(action_spec: specs.Array,
                  rng: np.random.Generator) -> np.ndarray:
  """A uniformly random valid action: baselines, calibration rollouts and
  warm-up all need one, for discrete and continuous specs alike."""
  if isinstance(action_spec, specs.DiscreteArray):
    return np.int32(rng.integers(action_spec.num_values))
  return rng.uniform(action_spec.minimum, action_spec.maximum,
                     action_spec.shape).astype(action_spec.dtype)

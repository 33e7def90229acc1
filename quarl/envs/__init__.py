"""Environment layer: one name scheme, one dm_env contract.

Names are `dm_control:DOMAIN:TASK` (DeepMind Control Suite) or `gym:ID`
(gym 0.26). Whatever the source, the environment has a flat float32
observation vector, float32 rewards and discounts, and either a float32
BoundedArray or an int32 DiscreteArray action spec, so agents, exporters and
actors never branch on where an environment came from.
"""
from quarl.envs.factory import make_environment
from quarl.envs.kinds import action_kind
from quarl.envs.kinds import random_action
from quarl.envs.names import EnvironmentNameError
from quarl.envs.names import validate_environment_name

__all__ = [
    'EnvironmentNameError',
    'action_kind',
    'make_environment',
    'random_action',
    'validate_environment_name',
]

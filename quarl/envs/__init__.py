"""Environment layer: one name scheme, one dm_env contract.

Names are `dm_control:DOMAIN:TASK` (DeepMind Control Suite), `gym:ID`
(gym 0.26), `gymnasium:ID` (gymnasium 1.x: the MuJoCo v5 suite),
`ale:GAME` (Atari 2600 on ale-py) or `football:SCENARIO` (Google Research
Football, run in a child process under its own Python). Whatever the
source, the environment has float32 rewards and discounts and either a
float32 BoundedArray or an int32 DiscreteArray action spec, so agents,
exporters and actors never branch on where an environment came from.
Observations are a flat float32 vector (Football's: the 115 floats of
`simple115v2`), except Atari's: a uint8 [84, 84, 4] stack of frames (pixels
are what a conv torso wants; they flatten losslessly to float32 for a
flat-input TFLite policy).
"""
from quarl.envs.factory import make_environment
from quarl.envs.kinds import action_kind
from quarl.envs.kinds import observation_kind
from quarl.envs.kinds import random_action
from quarl.envs.errors import EnvironmentBuildError
from quarl.envs.errors import EnvironmentNameError
from quarl.envs.names import validate_environment_name

__all__ = [
    'EnvironmentBuildError',
    'EnvironmentNameError',
    'action_kind',
    'make_environment',
    'observation_kind',
    'random_action',
    'validate_environment_name',
]

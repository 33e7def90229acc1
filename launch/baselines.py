"""Reference returns a trained policy must beat: random and zero actions.

On some tasks doing nothing already scores well (dm_control cartpole balance:
~745 for zero actions), so 'learned' is only meaningful against both.
"""
from typing import Dict

import numpy as np
from acme import specs

from quarl import envs


def _episode_return(environment, choose_action) -> float:
  timestep = environment.reset()
  total = 0.0
  while not timestep.last():
    timestep = environment.step(choose_action())
    total += float(timestep.reward or 0.0)
  return total


def baseline_returns(env_name: str, episodes: int = 3,
                     seed: int = 0) -> Dict[str, float]:
  """Mean episode return of uniformly random and of all-zero actions."""
  environment = envs.make_environment(env_name, seed)
  action_spec = specs.make_environment_spec(environment).actions
  rng = np.random.default_rng(seed)
  random_action = lambda: envs.random_action(action_spec, rng)  # pylint: disable=unnecessary-lambda-assignment
  if isinstance(action_spec, specs.DiscreteArray):
    zero_action = lambda: np.int32(0)  # pylint: disable=unnecessary-lambda-assignment
  else:
    zero_action = lambda: np.clip(  # pylint: disable=unnecessary-lambda-assignment
        np.zeros(action_spec.shape, action_spec.dtype), action_spec.minimum,
        action_spec.maximum).astype(action_spec.dtype)
  result = {
      'random': float(np.mean([_episode_return(environment, random_action)
                               for _ in range(episodes)])),
      'zero_action': float(np.mean([_episode_return(environment, zero_action)
                                    for _ in range(episodes)])),
  }
  environment.close()
  return result

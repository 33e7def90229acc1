"""Builds any named environment as a dm_env.Environment."""
import dm_env

from quarl.envs import names


def make_environment(name: str, seed: int = 0,
                     training: bool = False) -> dm_env.Environment:
  """Builds `name` (see quarl.envs) with all its randomness drawn from `seed`.

  `training=True` is for the environments actors learn from: Atari games
  then end an episode at each life lost (the DQN-era convention). The
  default plays whole games, as evaluation and baselines must. Other schemes
  build the same environment either way.

  Raises EnvironmentNameError for unknown names.
  """
  scheme, target = names.parse_environment_name(name)
  return names.SCHEMES[scheme].load(target, seed, training)

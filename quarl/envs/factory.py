"""Builds any named environment as a dm_env.Environment."""
import dm_env

from quarl.envs import names


def make_environment(name: str, seed: int = 0) -> dm_env.Environment:
  """Builds `name` (see quarl.envs) with all its randomness drawn from `seed`.

  Raises EnvironmentNameError for unknown names.
  """
  scheme, target = names.parse_environment_name(name)
  return names.SCHEMES[scheme].load(target, seed)

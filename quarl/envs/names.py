"""Environment names: `dm_control:DOMAIN:TASK`, `gym:ID`, `gymnasium:ID`,
`ale:GAME` or `football:SCENARIO`.

One string names an environment everywhere (flags, config.json, run dirs), so
a typo should fail fast, before any node of a distributed program starts, and
say what was probably meant.
"""
import difflib
from typing import Callable, Dict, List, NamedTuple, Tuple

import dm_env

from quarl.envs import atari_env
from quarl.envs import dm_control_env
from quarl.envs import football_env
from quarl.envs import gym_env
from quarl.envs.errors import EnvironmentNameError

_MAX_SUGGESTIONS = 5


class Scheme(NamedTuple):
  usage: str
  known_targets: Callable[[], List[str]]
  # (target, seed, training) -> environment.
  load: Callable[[str, int, bool], dm_env.Environment]


SCHEMES: Dict[str, Scheme] = {
    'dm_control': Scheme('dm_control:DOMAIN:TASK', dm_control_env.known_targets,
                         dm_control_env.load),
    'gym': Scheme('gym:ID', gym_env.GYM.known_targets, gym_env.GYM.load),
    'gymnasium': Scheme('gymnasium:ID', gym_env.GYMNASIUM.known_targets,
                        gym_env.GYMNASIUM.load),
    'ale': Scheme('ale:GAME', atari_env.known_targets, atari_env.load),
    'football': Scheme('football:SCENARIO', football_env.known_targets,
                       football_env.load),
}


def parse_environment_name(name: str) -> Tuple[str, str]:
  """Splits a known name into (scheme, target) without building the env."""
  scheme, _, target = name.partition(':')
  if scheme in SCHEMES and target in SCHEMES[scheme].known_targets():
    return scheme, target
  raise EnvironmentNameError(_message(name))


def validate_environment_name(name: str) -> None:
  """Raises EnvironmentNameError unless `name` names a known environment."""
  parse_environment_name(name)


def _suggestions(name: str) -> List[str]:
  """Close matches, searched within the name's scheme when it has a known one.

  With an unknown scheme the whole name and the part after the first ':' are
  both tried against every scheme, so 'Pendulum-v1' and 'openai:Pendulum-v1'
  both point at 'gym:Pendulum-v1' (an id two schemes share is suggested
  in the first scheme that has it).
  """
  scheme, separator, target = name.partition(':')
  if scheme in SCHEMES:
    queries, schemes = [target], [scheme]
  else:
    queries = [name, target] if separator else [name]
    schemes = list(SCHEMES)
  by_lowercase = {}
  for candidate_scheme in schemes:
    for known in SCHEMES[candidate_scheme].known_targets():
      by_lowercase.setdefault(known.lower(), f'{candidate_scheme}:{known}')
  suggestions = []
  for query in queries:
    for match in difflib.get_close_matches(query.lower(), by_lowercase,
                                           n=_MAX_SUGGESTIONS):
      if by_lowercase[match] not in suggestions:
        suggestions.append(by_lowercase[match])
  return suggestions[:_MAX_SUGGESTIONS]


def _message(name: str) -> str:
  usages = ', '.join(scheme.usage for scheme in SCHEMES.values())
  message = f'unknown environment {name!r}; schemes: {usages}'
  suggestions = _suggestions(name)
  if suggestions:
    message += f"; did you mean: {', '.join(suggestions)}"
  return message

"""Algorithms (one package each) and the registry the launcher picks from."""
from typing import Any, Callable, Dict, Tuple, Type

from agents.interface import Agent


def registry() -> Dict[str, Tuple[Type[Agent], Callable[..., Any]]]:
  """Agent name -> (Agent class, config_for_env(env_name, **overrides)).

  Imported lazily so `import agents` stays cheap for CLI validation.
  """
  from agents.d4pg import agent as d4pg_agent  # pylint: disable=g-import-not-at-top
  from agents.d4pg import config as d4pg_config  # pylint: disable=g-import-not-at-top
  return {'d4pg': (d4pg_agent.D4PGAgent, d4pg_config.config_for_env)}


AGENT_NAMES = ('d4pg',)

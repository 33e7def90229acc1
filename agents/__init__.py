"""Algorithms (one package each) and the registry the launcher picks from."""
from typing import Dict, Type

from agents.interface import Agent


def registry() -> Dict[str, Type[Agent]]:
  """Agent name -> (Agent class, config class); imported lazily."""
  from agents.d4pg.agent import D4PGAgent  # pylint: disable=g-import-not-at-top
  from agents.d4pg.config import D4PGConfig  # pylint: disable=g-import-not-at-top
  return {'d4pg': (D4PGAgent, D4PGConfig)}


AGENT_NAMES = ('d4pg',)

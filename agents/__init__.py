"""Algorithms (one package each) and the registry the launcher picks from.

Each agent package exports `AGENT_CLASS` (an agents.interface.Agent) and
`config_for_env(env_name, **overrides)`; they are imported lazily so that
`import agents` stays cheap for CLI validation.
"""
import importlib
import typing
from typing import Any, Callable, Tuple, Type

from agents.interface import Agent

AGENT_NAMES = ('a2c', 'd4pg', 'dqn', 'ppo', 'td3')


def lookup(name: str) -> Tuple[Type[Agent], Callable[..., Any]]:
  """(Agent class, config_for_env) of agent `name` (one of AGENT_NAMES)."""
  if name not in AGENT_NAMES:
    raise ValueError(f'unknown agent {name!r}; choose from '
                     f'{", ".join(AGENT_NAMES)}')
  package = importlib.import_module(f'agents.{name}')
  return package.AGENT_CLASS, package.config_for_env


def config_class(name: str) -> type:
  """Agent `name`'s config dataclass, from its light config module (the
  return type of its config_for_env), without importing the agent."""
  if name not in AGENT_NAMES:
    raise ValueError(f'unknown agent {name!r}')
  module = importlib.import_module(f'agents.{name}.config')
  return typing.get_type_hints(module.config_for_env)['return']

"""Small pieces every node needs: its agent, environment, clock and stop."""
import os
import time

import launchpad as lp
import numpy as np

from agents import registry
from launch.config import RunConfig
from quarl import envs


def make_agent(config: RunConfig, environment=None):
  """The run's Agent, built inside the node process from plain config."""
  from acme import specs  # pylint: disable=g-import-not-at-top
  environment = environment or envs.make_environment(config.env, config.seed)
  agent_class, _ = registry()[config.agent]
  return agent_class(specs.make_environment_spec(environment),
                     config.agent_config)


def wall_time_s(config: RunConfig) -> float:
  """Seconds since the launcher started the run (shared by all nodes)."""
  return time.time() - config.start_time


def stop_requested(timeout_s: float = 0.0) -> bool:
  """True once Launchpad asked this program to stop (SIGTERM/lp.stop())."""
  return lp.wait_for_stop(timeout_s)


def node_seed(config: RunConfig, offset: int) -> int:
  """Distinct, repeatable seeds per node so actors don't mirror each other."""
  return int(np.random.SeedSequence([config.seed, offset]).generate_state(1)[0])


def run_path(config: RunConfig, name: str) -> str:
  return os.path.join(config.run_dir, name)

"""Small pieces every node needs: its agent, environment, clock and stop."""
import os
import time
from typing import Callable, Optional

import numpy as np
from absl import logging

import agents
from launch import groups
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import stop
from launch.config import RunConfig
from launch.nodes import threads
from quarl import carbon
from quarl import envs


CPU_RECORD_PERIOD_S = 5.0


def make_agent(config: RunConfig, environment=None):
  """The run's Agent, built inside the node process from plain config."""
  from acme import specs  # pylint: disable=g-import-not-at-top
  environment = environment or envs.make_environment(config.env, config.seed)
  agent_class, _ = agents.lookup(config.agent)
  return agent_class(specs.make_environment_spec(environment),
                     config.agent_config)


def wall_time_s(config: RunConfig) -> float:
  """Seconds since the launcher started the run (shared by all nodes)."""
  return time.time() - config.start_time


def budget_spent(config: RunConfig, counts=None) -> bool:
  """The run's wall-clock budget is spent, or (given the counter's `counts`)
  its actor steps: a node still waiting for its first model or data then
  has nothing left to wait for."""
  if wall_time_s(config) >= config.max_seconds:
    return True
  return bool(counts and config.max_actor_steps and
              counts.get('actor_steps', 0) >= config.max_actor_steps)


def node_seed(config: RunConfig, offset: int) -> int:
  """Distinct, repeatable seeds per node so actors don't mirror each other."""
  return int(np.random.SeedSequence([config.seed, offset]).generate_state(1)[0])


def run_path(config: RunConfig, name: str) -> str:
  return os.path.join(config.run_dir, name)


def exit_after_stop(config: RunConfig,
                    before_exit: Optional[Callable[[], None]] = None,
                    service: bool = False) -> None:
  """The node's stop watcher (launch/runtime/stop.py), recording its CPU seconds
  last thing before the process ends."""

  def save():
    if before_exit:
      before_exit()
    for recorder in _cpu_recorders.values():
      recorder.record()

  stop.watch(config.run_dir, in_process=config.launch_type == 'local_mt',
             before_exit=save, service=service)


def _report_failure(config: RunConfig, node_name: str,
                    error: BaseException) -> None:
  """Records why in run_dir/node_errors.log (an exit code alone would not
  say), and stops the run unless the launcher restarts this node: peers
  blocked on it would otherwise wait for nothing."""
  import traceback  # pylint: disable=g-import-not-at-top
  text = ''.join(traceback.format_exception(type(error), error,
                                            error.__traceback__))
  with open(run_path(config, run_dir_lib.NODE_ERRORS_LOG), 'a') as handle:
    handle.write(f'=== {node_name} at {wall_time_s(config):.1f}s\n{text}\n')
  if (config.launch_type == 'local_mt' or
      not groups.restartable(groups.group_of(node_name))):
    summary = str(error).splitlines()[0][:200] if str(error) else ''
    stop.request(config.run_dir, f'failed: node {node_name} raised '
                 f'{type(error).__name__}: {summary}')


_cpu_recorders = {}


def record_cpu_time(config: RunConfig, node_name: str):
  """This process's CPU seconds -> run_dir/node_cpu/<node>.json, every few
  seconds (a hard exit skips exit hooks), so energy can be split by node."""
  if node_name not in _cpu_recorders:
    _cpu_recorders[node_name] = carbon.NodeCpuRecorder(
        config.run_dir, node_name, record_every_s=CPU_RECORD_PERIOD_S)
  return _cpu_recorders[node_name]


def mark(config: RunConfig, node_name: str, event: str) -> None:
  """A startup.csv row: this node reached `event` now ('build_start',
  'run_start': its imports done; the learner's 'compiled': its update
  compiled ahead; 'first_step'), and its process's CPU so far (what start-up
  cost it)."""
  run_dir_lib.CsvAppender(
      run_path(config, run_dir_lib.STARTUP_CSV),
      run_dir_lib.STARTUP_FIELDS).append(dict(
          wall_time_s=wall_time_s(config), node=node_name, event=event,
          cpu_s=carbon.process_cpu_seconds()))


def guarded(node_name: str, config: RunConfig, run_fn: Callable[[], None],
            phase: str = 'run'):
  """Runs a node's main loop; failures are recorded and stop the program.

  First sizes the process's thread pools (launch/nodes/threads.py).
  """
  threads.apply(config, groups.group_of(node_name))
  record_cpu_time(config, node_name)
  mark(config, node_name, f'{phase}_start')
  try:
    with stop.running(node_name):
      run_fn()
  except Exception as error:  # pylint: disable=broad-except
    if stop.requested():
      # Peers (e.g. the replay server) are going away: an expected ending.
      logging.info('%s ended during shutdown: %s', node_name, error)
      return
    _report_failure(config, node_name, error)
    raise

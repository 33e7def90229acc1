"""Small pieces every node needs: its agent, environment, clock and stop."""
import os
import threading
import time
from typing import Callable, Optional

import launchpad as lp
import numpy as np
from absl import logging

import agents
from launch.config import RunConfig
from launch.nodes import threads
from quarl import carbon
from quarl import envs


NODE_ERRORS_LOG = 'node_errors.log'
# Written by the launcher the moment the program starts stopping.
STOP_FILE = 'STOP'
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


def stop_requested(timeout_s: float = 0.0) -> bool:
  """True once Launchpad asked this program to stop (SIGTERM/lp.stop())."""
  return lp.wait_for_stop(timeout_s)


def node_seed(config: RunConfig, offset: int) -> int:
  """Distinct, repeatable seeds per node so actors don't mirror each other."""
  return int(np.random.SeedSequence([config.seed, offset]).generate_state(1)[0])


def run_path(config: RunConfig, name: str) -> str:
  return os.path.join(config.run_dir, name)


def exit_after_stop(config: RunConfig, grace_s: float = 5.0,
                    before_exit: Optional[Callable[[], None]] = None) -> None:
  """Ends this node process `grace_s` after a stop request, even when it is
  blocked inside Reverb (a rate-limited insert or sample never returns once
  its peers have stopped). Every CSV row is already on disk (unbuffered
  appends), so a hard exit loses nothing; `before_exit` may save state.
  Only for local_mp: under local_mt the nodes share the launcher's process.
  """
  if config.launch_type != 'local_mp':
    return
  stop_event = lp.stop_event()  # Only reachable from the node's own thread.
  stop_file = run_path(config, STOP_FILE)

  def watch():
    # Launchpad's SIGTERM handler sets stop_event, but Python runs handlers
    # on the main thread only, which may sit inside a blocking Reverb call;
    # the launcher's STOP file reaches us regardless.
    while not (stop_event.wait(0.5) or os.path.exists(stop_file)):
      pass
    time.sleep(grace_s)
    if before_exit:
      before_exit()
    for recorder in _cpu_recorders.values():
      recorder.record()
    os._exit(0)  # pylint: disable=protected-access

  threading.Thread(target=watch, daemon=True, name='stop-watchdog').start()


def report_failure_and_stop(config: RunConfig, node_name: str,
                            error: BaseException) -> None:
  """A node that raises records why in run_dir/node_errors.log and stops the
  whole program at once: an exit code alone would not say why, and peers
  blocked on the failed node would otherwise wait until Launchpad notices."""
  import traceback  # pylint: disable=g-import-not-at-top
  text = ''.join(traceback.format_exception(type(error), error,
                                            error.__traceback__))
  with open(run_path(config, NODE_ERRORS_LOG), 'a') as handle:
    handle.write(f'=== {node_name} at {wall_time_s(config):.1f}s\n{text}\n')
  lp.stop()


_cpu_recorders = {}


def record_cpu_time(config: RunConfig, node_name: str):
  """This process's CPU seconds -> run_dir/node_cpu/<node>.json, every few
  seconds (a hard exit skips exit hooks), so energy can be split by node."""
  if node_name not in _cpu_recorders:
    _cpu_recorders[node_name] = carbon.NodeCpuRecorder(
        config.run_dir, node_name, record_every_s=CPU_RECORD_PERIOD_S)
  return _cpu_recorders[node_name]


def guarded(node_name: str, config: RunConfig, run_fn: Callable[[], None]):
  """Runs a node's main loop; failures are recorded and stop the program.

  First sizes the process's thread pools (launch/nodes/threads.py).
  """
  threads.apply(config, node_name.split('_')[0])
  record_cpu_time(config, node_name)
  try:
    run_fn()
  except Exception as error:  # pylint: disable=broad-except
    if stop_requested():
      # Peers (e.g. the replay server) are going away: an expected ending.
      logging.info('%s ended during shutdown: %s', node_name, error)
      return
    report_failure_and_stop(config, node_name, error)
    raise

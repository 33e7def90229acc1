"""Starts a Launchpad program's nodes as processes, on one host or many, and
keeps them running to the end of the run.

Each node is started through Launchpad's own process entry with Launchpad's
serialized program (`PyNode.to_executables`), prefixed by its host's command
(`ip netns exec NS`, `ssh HOST`, or nothing for this machine), and finds its
peers through Launchpad's address binding, here a fixed host:port per node.
What Launchpad's local launcher does not do, this does: restart an actor,
evaluator or quantizer that dies (up to `max_restarts` each), stop the run
when a replay, counter or learner dies, and stop in two waves (launch/stop.py).
"""
import dataclasses
import functools
import os
import signal
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Sequence

import launchpad as lp
import portpicker
from launchpad import address as lp_address
from launchpad import context

from launch import hosts as hosts_lib
from launch import stop
from launch.nodes.common import RESTARTABLE_GROUPS

# Serve the others to the end: stopped in the second wave.
SERVICE_GROUPS = ('replay', 'counter')
WAVE_TIMEOUT_S = 45.0
POLL_S = 0.2
RESTARTS_LOG_PREFIX = '--- '
LP_STOP_REASON = 'lp.stop()'


class _HostPort(lp_address.AbstractAddressBuilder):
  """A node's address on its host, fixed at launch (as Launchpad's
  CLUSTER_SPEC builder does on Vertex AI)."""

  def __init__(self, host: str, port: int):
    self._address = f'[{host}]:{port}' if ':' in host else f'{host}:{port}'

  def build(self) -> str:
    return self._address


@dataclasses.dataclass
class _Node:
  name: str
  group: str
  host: hosts_lib.Host
  command: List[str]
  env: Dict[str, str]
  log_path: str
  process: Optional[subprocess.Popen] = None
  restarts: int = 0
  done: bool = False

  def start(self) -> None:
    command = self.command
    if self.host.prefix:  # A remote shell starts it: carry env and cwd along.
      command = (list(self.host.prefix) + ['env', '-C', os.getcwd()] +
                 [f'{key}={value}' for key, value in self.env.items()] +
                 command)
    with open(self.log_path, 'ab') as log:
      self.process = subprocess.Popen(
          command, env=dict(os.environ, **self.env), stdout=log,
          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
          start_new_session=True)  # The terminal's Ctrl-C is ours to relay.

  def kill(self) -> None:
    if self.process and self.process.poll() is None:
      try:
        os.killpg(self.process.pid, signal.SIGKILL)
      except ProcessLookupError:
        pass


@dataclasses.dataclass
class Outcome:
  status: str  # completed | failed | interrupted
  detail: str
  restarts: Dict[str, int]
  hosts: Dict[str, str]  # node -> host name


def _bind_and_build(program: lp.Program, plan: hosts_lib.HostsPlan,
                    run_dir: str, node_env: Dict[str, str]) -> List[_Node]:
  """Launchpad's launch preparation, with our addresses and commands."""
  # A node's lp.stop() becomes a stop request: Launchpad's own stopper
  # signals the launcher's pid, which on another host is some other process.
  stopper = functools.partial(stop.request, run_dir, LP_STOP_REASON)
  for nodes in program.groups.values():
    for node in nodes:
      node._launch_context.initialize(  # pylint: disable=protected-access
          context.LaunchType.LOCAL_MULTI_PROCESSING, None,
          program_stopper=stopper)
  for label, nodes in program.groups.items():
    for node in nodes:
      for handle in node.input_handles:
        handle.connect(node, label)
  for label, nodes in program.groups.items():
    for index, node in enumerate(nodes):
      host = plan.host_for(label, index)
      for address in node.addresses:
        address.bind(_HostPort(host.address, portpicker.pick_unused_port()))
  log_dir = os.path.join(run_dir, 'logs', 'nodes')
  os.makedirs(log_dir, exist_ok=True)
  built = []
  # The serialized program lands in run_dir/tmp: storage every host sees.
  shared_tmp = os.path.join(run_dir, 'tmp')
  os.makedirs(shared_tmp, exist_ok=True)
  default_tmp, tempfile.tempdir = tempfile.tempdir, shared_tmp
  try:
    for label, nodes in program.groups.items():
      commands = nodes[0].to_executables(nodes, label, nodes[0].launch_context)
      for index, command in enumerate(commands):
        name = label if len(nodes) == 1 and label != 'actor' else (
            f'{label}_{index}')
        env = dict(node_env, **{k: str(v) for k, v in
                                command.env_overrides.items()})
        built.append(_Node(name, label, plan.host_for(label, index),
                           list(command.command_as_list), env,
                           os.path.join(log_dir, f'{name}.log')))
  finally:
    tempfile.tempdir = default_tmp
  return built


class Supervisor:
  """Runs the nodes until the run stops; `run()` returns its Outcome."""

  def __init__(self, program: lp.Program, plan: hosts_lib.HostsPlan,
               run_dir: str, node_env: Dict[str, str], max_restarts: int,
               errors_log: str):
    self._run_dir = run_dir
    self._max_restarts = max_restarts
    self._errors_log = errors_log
    self._nodes = _bind_and_build(program, plan, run_dir, node_env)
    self._interrupts = 0

  def _on_signal(self, signum, frame) -> None:
    del frame
    self._interrupts += 1
    stop.request(self._run_dir, 'interrupted' if signum == signal.SIGINT
                 else 'terminated')
    if self._interrupts > 1:  # A second Ctrl-C: no more waiting.
      for node in self._nodes:
        node.kill()

  def _log(self, line: str) -> None:
    with open(self._errors_log, 'a') as handle:
      handle.write(f'{RESTARTS_LOG_PREFIX}{line}\n')

  def _handle_exit(self, node: _Node, code: int) -> None:
    """A node ended while the run goes on: restart it or stop the run."""
    if node.group in RESTARTABLE_GROUPS and (
        node.restarts < self._max_restarts):
      node.restarts += 1
      self._log(f'{node.name} exited with code {code}; restart '
                f'{node.restarts}/{self._max_restarts}')
      node.start()
      return
    node.done = True
    why = (f'after {node.restarts} restarts' if node.group
           in RESTARTABLE_GROUPS else 'which the run cannot lose')
    stop.request(self._run_dir, f'failed: node {node.name} exited with code '
                 f'{code} ({why})')

  def _stopping_wave(self, nodes: Sequence[_Node], timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline and any(
        n.process.poll() is None for n in nodes):
      time.sleep(POLL_S)
    for node in nodes:
      node.kill()
      node.process.wait()

  def run(self) -> Outcome:
    handlers = _install({signal.SIGINT: self._on_signal,
                         signal.SIGTERM: self._on_signal})
    try:
      for node in self._nodes:
        node.start()
      while stop.reason(self._run_dir) is None:
        for node in self._nodes:
          code = node.process.poll()
          if not node.done and code is not None and (
              stop.reason(self._run_dir) is None):
            self._handle_exit(node, code)
        time.sleep(POLL_S)
      workers = [n for n in self._nodes if n.group not in SERVICE_GROUPS]
      services = [n for n in self._nodes if n.group in SERVICE_GROUPS]
      self._stopping_wave(workers, WAVE_TIMEOUT_S)
      stop.request_services(self._run_dir)
      self._stopping_wave(services, WAVE_TIMEOUT_S)
    finally:
      for node in self._nodes:
        node.kill()
      _install(handlers)
    return outcome(stop.reason(self._run_dir),
                   {n.name: n.restarts for n in self._nodes},
                   {n.name: n.host.name for n in self._nodes})


def outcome(reason: str, restarts: Dict[str, int],
            hosts: Dict[str, str]) -> Outcome:
  """The run's status from why it stopped."""
  if reason.startswith('failed'):
    return Outcome('failed', reason, restarts, hosts)
  status = 'completed' if reason == stop.BUDGET_SPENT else 'interrupted'
  return Outcome(status, '', restarts, hosts)


def _install(handlers):
  """Installs signal handlers where allowed (the main thread); returns the
  previous ones."""
  previous = {}
  for signum, handler in handlers.items():
    try:
      previous[signum] = signal.signal(signum, handler)
    except ValueError:  # Not the main thread: leave signals alone.
      pass
  return previous


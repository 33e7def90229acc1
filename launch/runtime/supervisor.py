"""Starts a Launchpad program's nodes as processes, on one host or many, and
keeps them running to the end of the run.

Each node runs Launchpad's own process entry with Launchpad's serialized
program (`PyNode.to_executables`), started through its host's command prefix
(`ip netns exec NS`, `ssh HOST`, or nothing for this machine): forked by the
host's fork server (launch/runtime/forkserver.py) or, with --node_start=exec,
as an interpreter of its own. It finds its peers through Launchpad's address
binding, here a fixed host:port per node.
What Launchpad's local launcher does not do, this does: restart an actor,
evaluator or quantizer that dies (up to `max_restarts` each), stop the run
when a replay, counter or learner dies, and stop in two waves (launch/runtime/stop.py).
It also keeps the run bounded when parts of it go quiet: a node whose
heartbeat stalls (`stalled`) is killed and restarted like a dead one, the
wall-clock budget is enforced here too (`deadline`), and the launcher's own
death ends its nodes: a parent-death signal for local ones, the lease
(launch/runtime/stop.py) for remote ones.
"""
import ctypes
import dataclasses
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import launchpad as lp
import portpicker
from launchpad import address as lp_address
from launchpad import context

from launch import groups
from launch.runtime import forkserver
from launch.runtime import hosts as hosts_lib
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import stop
from launch.nodes import threads

# Serve the others to the end: stopped in the second wave.
WAVE_TIMEOUT_S = 45.0
# Less free space under run_dir than this ends the run as failed.
MIN_FREE_BYTES = 4 << 20
POLL_S = 0.2
RESTARTS_LOG_PREFIX = '--- '
LP_STOP_REASON = 'lp.stop()'
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
  """preexec_fn: the child gets SIGTERM when the process that started it
  dies (even by SIGKILL), so a dead launcher leaves no node behind."""
  ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class _ExecProcess:
  """A node started as an interpreter of its own."""

  def __init__(self, popen: subprocess.Popen):
    self._popen = popen
    self.pid = popen.pid

  def poll(self) -> Optional[int]:
    return self._popen.poll()

  def wait(self, timeout: float = forkserver.ANSWER_TIMEOUT_S
           ) -> Optional[int]:
    try:
      return self._popen.wait(timeout)
    except subprocess.TimeoutExpired:
      return None

  def kill(self) -> None:
    try:
      os.killpg(self.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass


class _ExecStarter:
  """--node_start=exec: each node a fresh interpreter, through the host's
  prefix (a remote shell carries env and cwd along)."""

  def __init__(self, prefix: Sequence[str]):
    self._prefix = list(prefix)

  def start(self, argv: Sequence[str], env: Dict[str, str], cwd: str,
            log_path: str) -> _ExecProcess:
    command = hosts_lib.through_prefix(self._prefix, cwd, env, argv)
    with open(log_path, 'ab') as log:
      return _ExecProcess(subprocess.Popen(
          command, env=dict(os.environ, **env), cwd=cwd, stdout=log,
          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
          start_new_session=True,  # The terminal's Ctrl-C is ours to relay.
          preexec_fn=die_with_parent))

  def close(self) -> None:
    pass


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
  env: Dict[str, str]  # Set on top of its host's environment.
  log_path: str
  starter: Any = None  # Its host's ForkServer or _ExecStarter.
  process: Any = None  # What the starter started: poll(), wait(), kill().
  restarts: int = 0
  done: bool = False
  started_at: float = 0.0

  def start(self) -> None:
    self.started_at = time.time()
    self.process = self.starter.start(self.command, self.env, os.getcwd(),
                                      self.log_path)

  def kill(self) -> None:
    if self.process and self.process.poll() is None:
      self.process.kill()


@dataclasses.dataclass
class Outcome:
  """How the program ended; launch/runtime/summary.py's run_status makes it a run
  status."""
  reason: str  # The stop's reason (launch/runtime/stop.py).
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
  log_dir = os.path.join(run_dir, run_dir_lib.NODE_LOGS_DIR)
  os.makedirs(log_dir, exist_ok=True)
  built = []
  # The serialized program lands in run_dir/tmp: storage every host sees.
  shared_tmp = os.path.join(run_dir, run_dir_lib.TMP_DIR)
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
  for node in built:  # Each node sizes its threads for its host's share.
    node.env[threads.HOST_NODES_ENV] = threads.host_nodes_value(
        [peer.group for peer in built if peer.host == node.host])
  return built


class Supervisor:
  """Runs the nodes until the run stops; `run()` returns its Outcome."""

  def __init__(self, program: lp.Program, plan: hosts_lib.HostsPlan,
               run_dir: str, node_env: Dict[str, str], max_restarts: int,
               errors_log: str, deadline: Optional[float] = None,
               stalled: Optional[Callable[[str, float], Optional[str]]] = None,
               node_start: str = 'fork'):
    """`deadline`: time.time() past which the launcher itself ends the run
    as budget spent (the evaluator normally does, earlier);
    `stalled(group, seconds_running)`: why a node of that group, running
    for that long, counts as stalled, or None."""
    self._run_dir = run_dir
    self._max_restarts = max_restarts
    self._errors_log = errors_log
    self._deadline = deadline
    self._stalled = stalled or (lambda group, seconds_running: None)
    self._node_env = node_env
    self._node_start = node_start
    self._nodes = _bind_and_build(program, plan, run_dir, node_env)
    self._interrupts = 0
    self._requested = None  # The first stop this launcher asked for.

  def _request(self, reason: str) -> None:
    self._requested = self._requested or reason
    stop.request(self._run_dir, reason)

  def _on_signal(self, signum, frame) -> None:
    del frame
    self._interrupts += 1
    self._request('interrupted' if signum == signal.SIGINT else 'terminated')
    if self._interrupts > 1:  # A second Ctrl-C: no more waiting.
      for node in self._nodes:
        node.kill()

  def _log(self, line: str) -> None:
    with open(self._errors_log, 'a') as handle:
      handle.write(f'{RESTARTS_LOG_PREFIX}{line}\n')

  def _handle_exit(self, node: _Node, how: str) -> None:
    """A node ended (`how`) while the run goes on: restart it or stop the
    run."""
    if groups.restartable(node.group) and (
        node.restarts < self._max_restarts):
      node.restarts += 1
      self._log(f'{node.name} {how}; restart '
                f'{node.restarts}/{self._max_restarts}')
      try:
        node.start()
        return
      except (forkserver.ForkServerError, OSError) as error:
        how = f'{how} and could not restart: {error}'
    node.done = True
    why = (f'after {node.restarts} restarts'
           if groups.restartable(node.group) else 'which the run cannot lose')
    self._request(f'failed: node {node.name} {how} ({why})')

  def _watch(self) -> None:
    """One pass over the nodes while the run goes on."""
    for node in self._nodes:
      if node.done or stop.reason(self._run_dir) is not None:
        return
      code = node.process.poll()
      if code is not None:
        self._handle_exit(node, f'exited with code {code}')
        continue
      stalled = self._stalled(node.group, time.time() - node.started_at)
      if stalled:
        node.kill()
        node.process.wait()
        self._handle_exit(node, f'stalled ({stalled})')
    if self._deadline and time.time() > self._deadline:
      self._request(stop.BUDGET_SPENT)
    free = shutil.disk_usage(self._run_dir).free
    if free < MIN_FREE_BYTES:  # Saves would fail: stop while state is whole.
      self._request(f'failed: no space left on device for {self._run_dir} '
                    f'({free} bytes free)')

  def _stopping_wave(self, nodes: Sequence[_Node], timeout_s: float) -> None:
    started = [n for n in nodes if n.process]
    deadline = time.time() + timeout_s
    while time.time() < deadline and any(
        n.process.poll() is None for n in started):
      time.sleep(POLL_S)
    for node in started:
      node.kill()
      node.process.wait()

  def _starters(self) -> List[Any]:
    """One starter per host; fork servers begin importing at once."""
    starters = {}
    for node in self._nodes:
      host = node.host
      if host.name not in starters:
        starters[host.name] = _ExecStarter(host.prefix) if (
            self._node_start == 'exec') else forkserver.ForkServer(
                forkserver.server_command(host.prefix, node.command[0],
                                          self._node_env),
                dict(os.environ, **self._node_env),
                os.path.join(os.path.dirname(node.log_path),
                             f'forkserver_{host.name}.log'),
                preexec_fn=die_with_parent)
      node.starter = starters[host.name]
    return list(starters.values())

  def _start_nodes(self) -> None:
    for node in self._nodes:
      try:
        node.start()
      except (forkserver.ForkServerError, OSError) as error:
        node.done = True
        self._request(f'failed: node {node.name} could not start: {error}')
        return

  def run(self) -> Outcome:
    handlers = install_signal_handlers(
        {signum: self._on_signal for signum in (signal.SIGINT, signal.SIGTERM,
                                                signal.SIGHUP)})
    starters = []
    try:
      with stop.LeaseRenewer(self._run_dir):
        starters = self._starters()
        self._start_nodes()
        while stop.reason(self._run_dir) is None:
          self._watch()
          time.sleep(POLL_S)
        workers = [n for n in self._nodes if not groups.service(n.group)]
        services = [n for n in self._nodes if groups.service(n.group)]
        self._stopping_wave(workers, WAVE_TIMEOUT_S)
        stop.request_services(self._run_dir)
        self._stopping_wave(services, WAVE_TIMEOUT_S)
    finally:
      for node in self._nodes:
        node.kill()
      for starter in starters:
        starter.close()
      install_signal_handlers(handlers)
    reason = stop.reason(self._run_dir)
    if reason == stop.UNREADABLE_REASON and self._requested:
      reason = self._requested  # Its file could not be written (full disk).
    return Outcome(reason, {n.name: n.restarts for n in self._nodes},
                   {n.name: n.host.name for n in self._nodes})


def install_signal_handlers(handlers):
  """Installs signal handlers where allowed (the main thread); returns the
  previous ones."""
  previous = {}
  for signum, handler in handlers.items():
    try:
      previous[signum] = signal.signal(signum, handler)
    except ValueError:  # Not the main thread: leave signals alone.
      pass
  return previous


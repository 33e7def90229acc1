"""Starts a Launchpad program's nodes as processes, on one host or many, and
keeps them running to the end of the run.

Each node runs Launchpad's own process entry with Launchpad's serialized
program (`PyNode.to_executables`) on the host its placement chose
(launch/runtime/placement.py: this machine, or a Ray cluster's): forked by
the host's fork server (launch/runtime/forkserver.py) or, with
--node_start=exec, as an interpreter of its own. It finds its peers through
Launchpad's address binding, here a fixed host:port per node.
What Launchpad's local launcher does not do, this does: restart an actor,
evaluator or quantizer that dies (up to `max_restarts` each), stop the run
when a replay, counter or learner dies, and stop in two waves (launch/runtime/stop.py).
It also keeps the run bounded when parts of it go quiet: a node whose
beacons (files it keeps stamping) stay unchanged for --stall_timeout_s is
stalled, and is killed and restarted like a dead one (or fails the run), the
wall-clock budget is enforced here too (`deadline`), and the launcher's own
death ends its nodes: a parent-death signal for local ones, Ray's fate
sharing and the lease (launch/runtime/stop.py) for remote ones.
"""
import collections
import dataclasses
import functools
import math
import os
import shutil
import signal
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import launchpad as lp

from launch import groups
from launch.runtime import forkserver
from launch.runtime import lp_adapter
from launch.runtime import placement as placement_lib
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


@dataclasses.dataclass
class _Node:
  name: str
  group: str
  host: placement_lib.Host
  command: List[str]
  env: Dict[str, str]  # Set on top of its host's environment.
  log_path: str
  serves: bool  # Peers dial it at its host's address: it cannot move.
  starter: Any = None  # Its host's starter (launch/runtime/placement.py).
  process: Any = None  # What the starter started: poll(), wait(), kill().
  restarts: int = 0
  done: bool = False
  beacons: Sequence[stop.Beacon] = ()

  def start(self, beacons: Sequence[Tuple[str, bool]] = ()) -> None:
    """Starts the node; `beacons`: (path, from_start) of its Beacons."""
    self.beacons = [stop.Beacon(*beacon) for beacon in beacons]
    self.process = self.starter.start(self.command, self.env, os.getcwd(),
                                      self.log_path)

  def silent_s(self) -> Optional[float]:
    """The longest any of its beacons has been silent (None: none beats
    yet)."""
    silences = [s for s in (b.silent_s() for b in self.beacons)
                if s is not None]
    return max(silences, default=None)

  def running(self) -> bool:
    try:
      return self.process.poll() is None
    except placement_lib.HostLost:
      return False

  def kill(self) -> None:
    if self.process and self.running():
      self.process.kill()


@dataclasses.dataclass
class Outcome:
  """How the program ended; launch/runtime/summary.py's run_status makes it a run
  status."""
  reason: str  # The stop's reason (launch/runtime/stop.py).
  restarts: Dict[str, int]
  hosts: Dict[str, str]  # node -> host name


def _build(program: lp.Program, placement, run_dir: str,
           node_env: Dict[str, str]) -> List[_Node]:
  """Every node with its host, command, environment and log."""
  # A node's lp.stop() becomes a stop request: Launchpad's own stopper
  # signals the launcher's pid, which on another host is some other process.
  stopper = functools.partial(stop.request, run_dir, LP_STOP_REASON)

  def address_of(group: str, index: int):
    host = placement.host_for(group, index)
    return host.address, placement.free_port(host)

  log_dir = os.path.join(run_dir, run_dir_lib.NODE_LOGS_DIR)
  os.makedirs(log_dir, exist_ok=True)
  # The serialized program lands in run_dir/tmp: storage every host sees.
  shared_tmp = os.path.join(run_dir, run_dir_lib.TMP_DIR)
  os.makedirs(shared_tmp, exist_ok=True)
  commands = lp_adapter.node_commands(program, stopper, address_of,
                                      shared_tmp)
  sizes = collections.Counter(command.group for command in commands)
  built = []
  for command in commands:
    name = command.group if sizes[command.group] == 1 and (
        command.group != 'actor') else f'{command.group}_{command.index}'
    built.append(_Node(name, command.group,
                       placement.host_for(command.group, command.index),
                       command.argv, dict(node_env, **command.env),
                       os.path.join(log_dir, f'{name}.log'), command.serves))
  for node in built:  # Each node sizes its threads for its host's share.
    node.env[threads.HOST_NODES_ENV] = threads.host_nodes_value(
        [peer.group for peer in built if peer.host == node.host])
    node.starter = placement.starter(node.host)
  return built


class Supervisor:
  """Runs the nodes until the run stops; `run()` returns its Outcome."""

  def __init__(self, program: lp.Program, placement, run_dir: str,
               node_env: Dict[str, str], max_restarts: int, errors_log: str,
               deadline: Optional[float] = None,
               beacons: Callable[[str, str], Sequence[Tuple[str, bool]]] = (
                   lambda name, group: ()),
               stall_timeout_s: float = math.inf):
    """`placement`: where nodes go (launch/runtime/placement.py; the
    supervisor closes it); `deadline`: time.monotonic() past which the
    launcher itself ends the run as budget spent (the evaluator normally
    does, earlier); `beacons(name, group)`: the (path, from_start) Beacons
    of a node, which is stalled once one is silent for `stall_timeout_s`."""
    self._run_dir = run_dir
    self._max_restarts = max_restarts
    self._errors_log = errors_log
    self._deadline = deadline
    self._beacons = beacons
    self._stall_timeout_s = stall_timeout_s
    self._placement = placement
    self._nodes = _build(program, placement, run_dir, node_env)
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

  def _move(self, node: _Node) -> None:
    """Puts a node whose host was lost on another host of its group."""
    if node.serves:
      raise placement_lib.HostLost(
          f'its peers dial it at {node.host.address}')
    node.host = self._placement.host_instead_of(node.group, node.host)
    node.starter = self._placement.starter(node.host)

  def _handle_exit(self, node: _Node, how: str,
                   host_lost: bool = False) -> None:
    """A node ended (`how`) while the run goes on: restart it (elsewhere,
    if its host was lost) or stop the run."""
    if groups.restartable(node.group) and (
        node.restarts < self._max_restarts):
      node.restarts += 1
      self._log(f'{node.name} {how}; restart '
                f'{node.restarts}/{self._max_restarts}')
      try:
        if host_lost:
          self._move(node)
        node.start(self._beacons(node.name, node.group))
        return
      except (forkserver.ForkServerError, OSError) as error:  # HostLost too.
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
      try:
        code = node.process.poll()
      except placement_lib.HostLost as lost:
        self._handle_exit(node, f'lost its host ({lost})', host_lost=True)
        continue
      if code is not None:
        self._handle_exit(node, f'exited with code {code}')
        continue
      silent = node.silent_s()
      if silent is not None and silent > self._stall_timeout_s:
        node.kill()
        node.process.wait()
        self._handle_exit(node, f'stalled (silent for {silent:.0f} s)')
    if self._deadline and time.monotonic() > self._deadline:
      self._request(stop.BACKSTOP)
    free = shutil.disk_usage(self._run_dir).free
    if free < MIN_FREE_BYTES:  # Saves would fail: stop while state is whole.
      self._request(f'failed: no space left on device for {self._run_dir} '
                    f'({free} bytes free)')

  def _stopping_wave(self, nodes: Sequence[_Node], timeout_s: float) -> None:
    started = [n for n in nodes if n.process]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(n.running() for n in started):
      time.sleep(POLL_S)
    for node in started:
      node.kill()
      node.process.wait()

  def _start_nodes(self) -> None:
    for node in self._nodes:
      try:
        node.start(self._beacons(node.name, node.group))
      except (forkserver.ForkServerError, OSError) as error:
        node.done = True
        self._request(f'failed: node {node.name} could not start: {error}')
        return

  def run(self) -> Outcome:
    handlers = install_signal_handlers(
        {signum: self._on_signal for signum in (signal.SIGINT, signal.SIGTERM,
                                                signal.SIGHUP)})
    try:
      with stop.LeaseRenewer(self._run_dir):
        self._start_nodes()
        # A request the run directory could not take (read-only, no inode
        # left) still ends the loop; the waves then kill what it missed.
        while stop.reason(self._run_dir) is None and not self._requested:
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
      self._placement.close()
      install_signal_handlers(handlers)
    reason = stop.reason(self._run_dir)
    if reason in (None, stop.UNREADABLE_REASON) and self._requested:
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


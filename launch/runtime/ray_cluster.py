"""Places a run's nodes on the machines of a Ray cluster (--launch_type=ray).

Ray runs one NodeHost actor on each machine the run uses; the NodeHost
starts that machine's nodes with the starter a local run uses (a fork
server, or a fresh interpreter with --node_start=exec), so every node is
still Launchpad's own process entry, reading the serialized program from the
run directory. Nothing goes through a shell.

Which machine runs which node group: a machine whose Ray resources include
`quarl_GROUP` (`ray start --resources='{"quarl_actor": 1}'`; the amount does
not matter) may run that group's nodes. Where no machine declares it, the
group runs on the driver's machine, except actors, which go to the other
machines. A group's nodes go round-robin over the machines allowed it.

What Ray adds: a machine that drops out is reported (its nodes' polls raise
placement.HostLost; the supervisor restarts a node of a restartable group
that serves no peer on another machine allowed its group, and fails the
run for any other), and when the driver dies Ray ends its NodeHosts, whose
nodes die with them (a parent-death signal), before the run's lease would.
"""
import collections
import logging
import os
import socket
import sys
import time
from typing import Dict, List, Optional, Sequence

import portpicker

from launch.runtime import placement
from launch.runtime import run_dir as run_dir_lib

RESOURCE_PREFIX = 'quarl_'
# A NodeHost that answers no call for this long counts as lost.
CALL_TIMEOUT_S = 60.0
WAIT_POLL_S = 0.2


class ClusterError(RuntimeError):
  """The cluster cannot run this program; one line for the user."""


class NodeHost:
  """A Ray actor on one machine: starts the run's nodes there."""

  def __init__(self, node_start: str, node_env: Dict[str, str]):
    self._node_start = node_start
    self._node_env = node_env
    self._starter = None
    self._processes = {}

  def missing(self, paths: Sequence[str]) -> List[str]:
    return [path for path in paths if not os.path.exists(path)]

  def free_port(self) -> int:
    return portpicker.pick_unused_port()

  def prepare(self, log_path: str) -> None:
    """Starts this machine's starter (a fork server begins importing)."""
    self._starter = placement.local_starter(self._node_start,
                                            self._node_env, log_path)

  def start(self, argv: Sequence[str], env: Dict[str, str], cwd: str,
            log_path: str) -> int:
    process = self._starter.start(argv, env, cwd, log_path)
    self._processes[process.pid] = process
    return process.pid

  def poll(self, pid: int) -> Optional[int]:
    return self._processes[pid].poll()

  def kill(self, pid: int) -> None:
    self._processes[pid].kill()

  def close(self) -> None:
    for process in self._processes.values():
      process.kill()
    if self._starter is not None:
      self._starter.close()


class _RayProcess:
  """A node on a NodeHost: what the supervisor needs of a Popen."""

  def __init__(self, host: placement.Host, actor, pid: int):
    self._host = host
    self._actor = actor
    self.pid = pid

  def poll(self) -> Optional[int]:
    return _call(self._host, self._actor.poll, self.pid)

  def wait(self, timeout: float = CALL_TIMEOUT_S) -> Optional[int]:
    deadline = time.monotonic() + timeout
    while True:
      try:
        code = self.poll()
      except placement.HostLost:
        return None  # Its machine is gone, and so is it.
      if code is not None or time.monotonic() > deadline:
        return code
      time.sleep(WAIT_POLL_S)

  def kill(self) -> None:
    try:
      _call(self._host, self._actor.kill, self.pid)
    except placement.HostLost:
      pass


class _RemoteStarter:
  """The starter interface, on a NodeHost."""

  def __init__(self, host: placement.Host, actor):
    self._host = host
    self._actor = actor

  def start(self, argv, env, cwd, log_path) -> _RayProcess:
    pid = _call(self._host, self._actor.start, list(argv), dict(env), cwd,
                log_path)
    return _RayProcess(self._host, self._actor, pid)


def _call(host: placement.Host, method, *args):
  """`method.remote(*args)`'s result; HostLost if its machine is gone."""
  import ray  # pylint: disable=g-import-not-at-top
  try:
    return ray.get(method.remote(*args), timeout=CALL_TIMEOUT_S)
  except ray.exceptions.GetTimeoutError:
    raise placement.HostLost(
        f'Ray node {host.name} did not answer within {CALL_TIMEOUT_S:g} s'
    ) from None
  except ray.exceptions.RayActorError as error:
    raise placement.HostLost(
        f'Ray node {host.name} is gone: '
        f'{str(error).strip().splitlines()[0][:200]}') from None


def reach_address(address: str) -> str:
  """This machine's IP on its route to `address` (HOST:PORT). Ray would
  read the driver's IP from a per-machine cache file, which machines that
  share one /tmp (namespaces, containers) overwrite for each other."""
  host, port = address.rsplit(':', 1)
  family, kind, proto, _, target = socket.getaddrinfo(
      host.strip('[]'), int(port), type=socket.SOCK_DGRAM)[0]
  with socket.socket(family, kind, proto) as probe:
    probe.connect(target)  # UDP: picks a route, sends nothing.
    return probe.getsockname()[0]


def _is_loopback(ip: str) -> bool:
  return ip.startswith('127.') or ip == '::1'


def _machines_for(groups: Sequence[str], alive: List[dict],
                  driver_ip: str) -> Dict[str, List[dict]]:
  """Each group's allowed machines (Ray node records), in a fixed order."""
  alive = sorted(alive, key=lambda node: (node['NodeManagerAddress'],
                                          node['NodeID']))
  own = [n for n in alive if n['NodeManagerAddress'] == driver_ip][:1] or (
      alive[:1])
  others = [n for n in alive if n is not own[0]] or own
  machines = {}
  for group in groups:
    declared = [n for n in alive
                if n['Resources'].get(RESOURCE_PREFIX + group, 0) > 0]
    machines[group] = declared or (others if group == 'actor' else own)
  return machines


class RayPlacement:
  """Nodes on the machines of the Ray cluster at `address` (HOST:PORT)."""

  def __init__(self, address: str, groups: Sequence[str],
               node_start: str, node_env: Dict[str, str], run_dir: str):
    """`groups`: the program's node groups.

    Raises:
      ClusterError: the cluster is unreachable or cannot run the program.
    """
    import ray  # pylint: disable=g-import-not-at-top
    try:
      driver_ip = reach_address(address)
      ray.init(address=address, _node_ip_address=driver_ip,
               log_to_driver=False, logging_level=logging.WARNING,
               namespace='quarl')
    except (OSError, ConnectionError, ValueError, RuntimeError) as error:
      raise ClusterError(f'cannot join the Ray cluster at {address}: '
                         f'{str(error).strip().splitlines()[0]}') from None
    alive = [node for node in ray.nodes() if node['Alive']]
    if len(alive) > 1:
      for node in alive:
        if _is_loopback(node['NodeManagerAddress']):
          raise ClusterError(
              f'Ray node {node["NodeID"][:8]} advertises the loopback '
              f'address {node["NodeManagerAddress"]}: peers on the other '
              'machines would dial themselves (start it with '
              '--node-ip-address)')
    machines = _machines_for(groups, alive, driver_ip)
    names = collections.Counter(n['NodeManagerAddress'] for n in alive)
    self._hosts = {}  # Ray node id -> Host
    self._actors = {}  # Host -> NodeHost actor
    remote_host = ray.remote(num_cpus=0, max_restarts=0)(NodeHost)
    for node in {n['NodeID']: n for ms in machines.values() for n in ms
                 }.values():
      ip = node['NodeManagerAddress']
      name = ip if names[ip] == 1 else f'{ip}#{node["NodeID"][:6]}'
      host = placement.Host(name, ip)
      self._hosts[node['NodeID']] = host
      self._actors[host] = remote_host.options(
          scheduling_strategy=ray.util.scheduling_strategies
          .NodeAffinitySchedulingStrategy(node['NodeID'], soft=False)
      ).remote(node_start, node_env)
    self._machines = {group: [self._hosts[n['NodeID']] for n in ms]
                      for group, ms in machines.items()}
    needed = [os.path.abspath(run_dir), os.getcwd(), sys.executable]
    log_dir = os.path.join(os.path.abspath(run_dir), run_dir_lib.NODE_LOGS_DIR)
    os.makedirs(log_dir, exist_ok=True)  # The fork servers' logs go there.
    for host, actor in self._actors.items():
      missing = self._call(host, actor.missing, needed)
      if missing:
        self.close()
        raise ClusterError(
            f'{missing[0]} is not on Ray node {host.name}: every machine '
            'needs the repository, its .venv and the run directory at the '
            'same paths (shared storage)')
      self._call(host, actor.prepare,
                 os.path.join(log_dir, f'forkserver_{host.name}.log'))

  def _call(self, host, method, *args):
    try:
      return _call(host, method, *args)
    except placement.HostLost as lost:
      self.close()
      raise ClusterError(str(lost)) from None

  def host_for(self, group: str, index: int) -> placement.Host:
    machines = self._machines[group]
    return machines[index % len(machines)]

  def free_port(self, host: placement.Host) -> int:
    return _call(host, self._actors[host].free_port)

  def host_instead_of(self, group: str, lost: placement.Host
                      ) -> placement.Host:
    """The next machine allowed `group`, now that `lost` is gone."""
    for machines in self._machines.values():
      if lost in machines:
        machines.remove(lost)
    if not self._machines[group]:
      raise placement.HostLost(f'no other Ray node may run {group} nodes')
    return self._machines[group][0]

  def starter(self, host: placement.Host) -> _RemoteStarter:
    return _RemoteStarter(host, self._actors[host])

  def close(self) -> None:
    import ray  # pylint: disable=g-import-not-at-top
    for host, actor in self._actors.items():
      try:
        _call(host, actor.close)
      except placement.HostLost:
        pass
      ray.kill(actor)
    ray.shutdown()

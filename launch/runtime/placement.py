"""Where a run's nodes go and what starts them there.

The supervisor (launch/runtime/supervisor.py) asks a placement which host
runs node `index` of a group, a free port on that host for each address the
node serves, a starter there, and, when a host is lost, another host for
a group's node that serves nothing. A starter starts a node's
command (`start(argv, env, cwd, log_path)`) and returns a process with
`pid`, `poll()`, `wait(timeout)` and `kill()`. `poll()` raises HostLost
when the host itself is gone, which a dead node's exit code cannot say.

LocalPlacement puts every node on this machine; launch/runtime/ray_cluster.py
places them on the machines of a Ray cluster.
"""
import dataclasses
import os
import signal
import subprocess
from typing import Dict, Optional, Sequence

import portpicker

from launch.runtime import forkserver


class HostLost(OSError):
  """The machine a node ran on is gone (its Ray node died)."""


@dataclasses.dataclass(frozen=True)
class Host:
  """Where a node runs and how its peers reach it."""
  name: str  # Label recorded in summary.json.
  address: str  # What peers dial to reach nodes on this host.


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


class ExecStarter:
  """--node_start=exec: each node a fresh interpreter."""

  def start(self, argv: Sequence[str], env: Dict[str, str], cwd: str,
            log_path: str) -> _ExecProcess:
    with open(log_path, 'ab') as log:
      return _ExecProcess(subprocess.Popen(
          list(argv), env=dict(os.environ, **env), cwd=cwd, stdout=log,
          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
          start_new_session=True,  # The terminal's Ctrl-C is ours to relay.
          preexec_fn=forkserver.die_with_parent))

  def close(self) -> None:
    pass


def local_starter(node_start: str, node_env: Dict[str, str], log_path: str):
  """A starter on the machine that calls it: a fork server (which begins
  importing at once; its own log at `log_path`) or ExecStarter."""
  if node_start == 'exec':
    return ExecStarter()
  return forkserver.ForkServer(
      forkserver.SERVER_COMMAND, dict(os.environ, **node_env), log_path,
      preexec_fn=forkserver.die_with_parent)


class LocalPlacement:
  """Every node on this machine, started by one local starter."""

  HOST = Host('localhost', 'localhost')

  def __init__(self, node_start: str, node_env: Dict[str, str],
               log_dir: str):
    self._args = (node_start, node_env,
                  os.path.join(log_dir, f'forkserver_{self.HOST.name}.log'))
    self._starter = None

  def host_for(self, group: str, index: int) -> Host:
    del group, index
    return self.HOST

  def free_port(self, host: Host) -> int:
    del host
    return portpicker.pick_unused_port()

  def host_instead_of(self, group: str, lost: Host) -> Host:
    raise HostLost(f'{group} has no host but {lost.name}')

  def starter(self, host: Host):
    del host
    if self._starter is None:
      self._starter = local_starter(*self._args)
    return self._starter

  def close(self) -> None:
    if self._starter is not None:
      self._starter.close()

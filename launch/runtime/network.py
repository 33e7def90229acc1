"""Local runs in a private network namespace: nothing listens on the network.

Courier (Launchpad's RPC) and Reverb listen on every interface with no
authentication, and Courier runs what a caller sends, so a run on host
networking lets any host that reaches this machine run code in the learner.
The launcher therefore re-executes itself inside a new network namespace
with only loopback up (as root, or through a user namespace where the
kernel allows it), handing its resolved settings over as data (nothing is
parsed or measured twice); every node process inherits the namespace, files
land on the host as before, and none of the run's ports exists outside it.
Where no namespace can be made the launcher refuses to start: host
networking is only ever the explicit --network=host.
"""
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys
from typing import Any, List, Optional

from launch.runtime import handoff as handoff_lib

MODES = ('auto', 'isolated', 'host')
# Set by the launcher for its re-executed self (and inherited by the nodes):
# 'isolated' is believed only where the namespace checks out (no interface
# but loopback up), and no value turns isolation off.
ENV_VAR = 'QUARL_NETWORK'

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


class IsolationError(RuntimeError):
  """No private namespace where one is needed, or a QUARL_NETWORK the
  launcher did not set."""


def _interface_flags(sock: socket.socket, name: str) -> int:
  request = struct.pack('16sH14s', name.encode(), 0, bytes(14))
  return struct.unpack('16sH', fcntl.ioctl(sock, _SIOCGIFFLAGS,
                                           request)[:18])[1]


def interfaces_up() -> List[str]:
  """Names of this process's network namespace's interfaces that are up.

  Asked of the kernel through a socket, which lives in the caller's
  namespace (/sys/class/net shows the namespace sysfs was mounted in)."""
  up = []
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
    for _, name in socket.if_nameindex():
      try:
        if _interface_flags(sock, name) & _IFF_UP:
          up.append(name)
      except OSError:  # Gone since it was listed: not up.
        pass
  return up


def current() -> str:
  """'isolated' inside the launcher's private namespace, else 'host'."""
  if (os.environ.get(ENV_VAR) == 'isolated' and
      set(interfaces_up()) <= {'lo'}):
    return 'isolated'
  return 'host'


def unshare_prefix() -> Optional[List[str]]:
  """The unshare command that works on this machine, or None."""
  if not shutil.which('unshare'):
    return None
  candidates = [['unshare', '--user', '--map-root-user', '--net']]
  if os.geteuid() == 0:
    candidates.insert(0, ['unshare', '--net'])
  for prefix in candidates:
    probe = subprocess.run(prefix + ['true'], capture_output=True,
                           check=False)
    if probe.returncode == 0:
      return prefix
  return None


def enter(mode: str, handoff: Any) -> None:
  """Re-executes `python -m launch.train` in a private network namespace
  unless `mode` is 'host', handing it `handoff` (launch/runtime/handoff.py);
  never returns then. Returns inside that namespace, or for 'host'.

  Raises:
    IsolationError: 'auto' or 'isolated' where no namespace can be made
      (only --network=host runs on host networking), or QUARL_NETWORK set
      from outside.
  """
  if current() == 'isolated':  # The re-executed launcher.
    return
  if ENV_VAR in os.environ:
    raise IsolationError(
        f'{ENV_VAR}={os.environ[ENV_VAR]} is set, but this process is not '
        'in the launcher\'s private network namespace; unset it (only '
        '--network=host opts out of isolation)')
  if mode == 'host':
    return
  prefix = unshare_prefix()
  if prefix is None:
    raise IsolationError(
        f'--network={mode}: this machine allows no private network '
        'namespace (unshare --net failed, also through a user namespace); '
        'pass --network=host to run on host networking, where the run\'s '
        'Courier and Reverb ports are reachable from the network')
  environment = dict(handoff_lib.environment(handoff_lib.write(handoff)),
                     **{ENV_VAR: 'isolated'})
  command = prefix + ['--', sys.executable, '-m', 'launch.train']
  sys.stdout.flush()
  sys.stderr.flush()
  os.execvpe(command[0], command, environment)


def bring_up_loopback() -> None:
  """A new namespace starts with lo down: nodes could not reach each other."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
    flags = _interface_flags(sock, 'lo')
    fcntl.ioctl(sock, _SIOCSIFFLAGS,
                struct.pack('16sH14s', b'lo', flags | _IFF_UP, bytes(14)))

"""Local runs in a private network namespace: nothing listens on the network.

Courier (Launchpad's RPC) and Reverb listen on every interface with no
authentication, and Courier runs what a caller sends, so a run on host
networking lets any host that reaches this machine run code in the learner.
The launcher therefore re-executes itself inside a new network namespace
with only loopback up (as root, or through a user namespace where the
kernel allows it); every node process inherits it, files land on the host
as before, and none of the run's ports exists outside it.
"""
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys
from typing import List, Optional, Sequence

MODES = ('auto', 'isolated', 'host')
# Set in the re-executed launcher (and inherited by its nodes): which
# network the run is on.
ENV_VAR = 'QUARL_NETWORK'

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


class IsolationError(RuntimeError):
  """--network=isolated on a machine that allows no private namespace."""


def current() -> str:
  """'isolated' inside the private namespace, else 'host'."""
  return os.environ.get(ENV_VAR, 'host')


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


def enter(mode: str, argv: Sequence[str]) -> None:
  """Re-executes `python -m launch.train argv[1:]` in a private network
  namespace when `mode` asks for one and the machine allows it (never
  returns then); otherwise returns, to run on host networking.

  Raises:
    IsolationError: mode 'isolated' where no namespace can be made.
  """
  if ENV_VAR in os.environ:  # Already re-executed (or told where to run).
    return
  if mode == 'host':
    os.environ[ENV_VAR] = 'host'
    return
  prefix = unshare_prefix()
  if prefix is None:
    if mode == 'isolated':
      raise IsolationError(
          '--network=isolated: this machine allows no private network '
          'namespace (unshare --net failed, also through a user namespace); '
          'use --network=host')
    print('train: warning: cannot isolate the run\'s network here (unshare '
          'failed); running on host networking, where its Courier and Reverb '
          'ports are reachable from the network', file=sys.stderr, flush=True)
    os.environ[ENV_VAR] = 'host'
    return
  environment = dict(os.environ, **{ENV_VAR: 'isolated'})
  command = prefix + ['--', sys.executable, '-m', 'launch.train',
                      *argv[1:]]
  sys.stdout.flush()
  sys.stderr.flush()
  os.execvpe(command[0], command, environment)


def bring_up_loopback() -> None:
  """A new namespace starts with lo down: nodes could not reach each other."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
    request = struct.pack('16sH14s', b'lo', 0, bytes(14))
    flags = struct.unpack('16sH', fcntl.ioctl(sock, _SIOCGIFFLAGS,
                                              request)[:18])[1]
    fcntl.ioctl(sock, _SIOCSIFFLAGS,
                struct.pack('16sH14s', b'lo', flags | _IFF_UP, bytes(14)))

"""Resolved settings handed to a launch.train as data.

A sweep starting a run, and a launcher re-executing itself inside its
network namespace, pass the RunConfig they resolved (and the argv that
config.json records) as a pickle in an inherited memfd named by one
environment variable: nothing is parsed or resolved twice, and no setting
travels as an argv string. The child reads it once and drops the variable,
so the run's own node processes never see it.
"""
import os
import pickle
import subprocess
from typing import Any, Dict, List, Optional

ENV_VAR = 'QUARL_HANDOFF_FD'
_NAME = 'quarl-handoff'


class HandoffError(RuntimeError):
  """A QUARL_HANDOFF_FD that names no handed-over settings."""


def write(payload: Any) -> int:
  """A new memfd holding `payload`, read position at its start, inherited
  by exec (the caller closes it once the child runs)."""
  fd = os.memfd_create(_NAME, 0)  # No close-on-exec: the child reads it.
  with os.fdopen(os.dup(fd), 'wb') as handle:
    pickle.dump(payload, handle)
  os.lseek(fd, 0, os.SEEK_SET)
  return fd


def environment(fd: int) -> Dict[str, str]:
  """os.environ naming `fd` as the handoff, for the child's exec."""
  return dict(os.environ, **{ENV_VAR: str(fd)})


def start(command: List[str], payload: Any, **popen_args) -> subprocess.Popen:
  """subprocess.Popen(command) handed `payload`."""
  fd = write(payload)
  try:
    return subprocess.Popen(command, env=environment(fd), pass_fds=(fd,),
                            **popen_args)
  finally:
    os.close(fd)


def received() -> Optional[Any]:
  """What the process that started this one handed over, or None.

  Raises:
    HandoffError: QUARL_HANDOFF_FD set, but not to a handoff memfd.
  """
  value = os.environ.pop(ENV_VAR, None)
  if value is None:
    return None
  try:
    fd = int(value)
    target = os.readlink(f'/proc/self/fd/{fd}')
  except (ValueError, OSError):
    target = ''
  if not target.startswith(f'/memfd:{_NAME}'):
    raise HandoffError(f'{ENV_VAR}={value} names no settings handed over '
                       'by a launcher; unset it')
  with os.fdopen(fd, 'rb') as handle:
    return pickle.load(handle)

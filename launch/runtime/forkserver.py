"""Starts a host's node processes by forking one interpreter that has already
imported TensorFlow, Reverb, Acme and the agents.

A node started as a fresh interpreter spends 3-4 s of CPU importing them, so
nine nodes on 2 cores spent 15-30 s before any main loop ran. One server per
host pays that once; each node is then a fork of it that runs Launchpad's
own process entry with the node's command line, exactly as `python
process_entry.py ...` would. The server runs no TF op before it forks: its
only other threads are OpenBLAS's, which re-create themselves after a fork.

The server is `python -m launch.runtime.forkserver` (SERVER_COMMAND), started
on its host by that host's starter (launch/runtime/placement.py). Protocol, one JSON object per line. The launcher writes
  {"start": [argv], "env": {...}, "cwd": DIR, "log": PATH} (env: what
  the node sets on top of the server's environment) or
  {"kill": PID, "signal": N};
the server answers every start with {"pid": PID} (or {"error": TEXT}), in
order, and reports {"exited": PID, "code": C} when a child ends (C < 0: the
signal that ended it, as subprocess reports). A child gets its own session,
its log as stdout and stderr, and SIGTERM when the server dies. The server
passes a SIGTERM on to its children (a launcher's death reaches them as it
did when they were its own children) and kills them when its input closes.
"""
import ctypes
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, Iterable, List, Optional, Sequence, Set

# Generous for a loaded machine: the first answer waits for the imports.
ANSWER_TIMEOUT_S = 300.0
PRELOAD = ('launch.program',)
SERVER_COMMAND = (sys.executable, '-m', 'launch.runtime.forkserver')
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
  """preexec_fn: the child gets SIGTERM when the process that started it
  dies (even by SIGKILL), so a dead launcher leaves no node behind."""
  ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ForkServerError(RuntimeError):
  """The server could not start a node, or is gone."""


class ForkedProcess:
  """A node forked by a server: what the supervisor needs of a Popen."""

  def __init__(self, server: 'ForkServer', pid: int):
    self._server = server
    self.pid = pid

  def poll(self) -> Optional[int]:
    return self._server.exit_code(self.pid)

  def wait(self, timeout: float = ANSWER_TIMEOUT_S) -> Optional[int]:
    """The exit code, or None if none came within `timeout`."""
    return self._server.wait_exit(self.pid, timeout)

  def kill(self) -> None:
    self._server.send({'kill': self.pid, 'signal': int(signal.SIGKILL)})


class ForkServer:
  """The launcher's side of one host's server."""

  def __init__(self, command: Sequence[str], env: Dict[str, str],
               log_path: str, preexec_fn=None):
    """`command` (SERVER_COMMAND) starts the server with `env`; its own
    stderr goes to `log_path`."""
    with open(log_path, 'ab') as log:
      self._process = subprocess.Popen(
          list(command), env=env, stdin=subprocess.PIPE,
          stdout=subprocess.PIPE, stderr=log, start_new_session=True,
          preexec_fn=preexec_fn)
    self._log_path = log_path
    self._lock = threading.Lock()
    self._changed = threading.Condition(self._lock)
    self._answers: 'queue.Queue[dict]' = queue.Queue()
    self._exits: Dict[int, int] = {}
    self._children: List[int] = []
    self._gone = False
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self) -> None:
    for line in self._process.stdout:
      try:
        message = json.loads(line)
      except ValueError:
        break  # Cut off as it died.
      if 'exited' in message:
        with self._changed:
          self._exits[message['exited']] = message['code']
          self._changed.notify_all()
      else:
        self._answers.put(message)
    with self._changed:  # Its children got SIGTERM as it went.
      self._gone = True
      for pid in self._children:
        self._exits.setdefault(pid, -signal.SIGTERM)
      self._changed.notify_all()
    self._answers.put({'error': 'the fork server exited; its log: '
                                f'{self._log_path}'})

  def send(self, message: dict) -> None:
    try:
      self._process.stdin.write(json.dumps(message).encode() + b'\n')
      self._process.stdin.flush()
    except (BrokenPipeError, ValueError):
      pass  # Gone: its children are too (SIGTERM on its death).

  def start(self, argv: Sequence[str], env: Dict[str, str], cwd: str,
            log_path: str) -> ForkedProcess:
    """Forks a node running `argv` with `env` set on top of the server's
    environment."""
    self.send({'start': list(argv), 'env': env, 'cwd': cwd, 'log': log_path})
    try:
      answer = self._answers.get(timeout=ANSWER_TIMEOUT_S)
    except queue.Empty:
      raise ForkServerError(
          f'the fork server did not answer within {ANSWER_TIMEOUT_S:.0f} s; '
          f'its log: {self._log_path}') from None
    if 'error' in answer:
      raise ForkServerError(answer['error'])
    with self._lock:
      self._children.append(answer['pid'])
      if self._gone:
        self._exits.setdefault(answer['pid'], -signal.SIGTERM)
    return ForkedProcess(self, answer['pid'])

  def exit_code(self, pid: int) -> Optional[int]:
    with self._lock:
      return self._exits.get(pid)

  def wait_exit(self, pid: int, timeout: float) -> Optional[int]:
    with self._changed:
      self._changed.wait_for(lambda: pid in self._exits, timeout)
      return self._exits.get(pid)

  def close(self, timeout_s: float = 10.0) -> None:
    """Ends the server, which kills any child still running."""
    try:
      self._process.stdin.close()
    except OSError:
      pass
    try:
      self._process.wait(timeout_s)
    except subprocess.TimeoutExpired:
      self._process.kill()
      self._process.wait()


# The server.

def _write(out_fd: int, message: dict) -> None:
  data = json.dumps(message).encode() + b'\n'
  while data:
    data = data[os.write(out_fd, data):]


def _become_node(request: dict, private_fds: Sequence[int],
                 server_pid: int) -> None:
  """In the forked child: set up as the node's own interpreter would be,
  then run Launchpad's entry script. Its SystemExit (or exception) unwinds
  through the server's frames to a normal interpreter exit, so the node's
  threads and atexit handlers end as they would in a fresh process."""
  try:
    os.setsid()
    die_with_parent()
    if os.getppid() != server_pid:  # It died before the line above.
      os._exit(1)  # pylint: disable=protected-access
    for signum in (signal.SIGTERM, signal.SIGCHLD):
      signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    for fd in private_fds:
      os.close(fd)
    log = os.open(request['log'], os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                  0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(request['cwd'])
    os.environ.update(request['env'])
    import tempfile  # pylint: disable=g-import-not-at-top
    import numpy as np  # pylint: disable=g-import-not-at-top
    tempfile.tempdir = None  # Read TMPDIR again: the node's own.
    np.random.seed()  # As a fresh interpreter: not the server's state.
    sys.argv = list(request['start'][1:])
  except BaseException:  # pylint: disable=broad-except
    import traceback  # pylint: disable=g-import-not-at-top
    traceback.print_exc()
    os._exit(1)  # pylint: disable=protected-access
  import runpy  # pylint: disable=g-import-not-at-top
  runpy.run_path(sys.argv[0], run_name='__main__')
  raise SystemExit(0)


def _kill_all(children: Iterable[int], signum: int) -> None:
  """Signals each child's process group; a child that has not yet called
  setsid() has none, so it is signalled itself (an unreaped child's pid
  cannot have been reused)."""
  for pid in children:
    try:
      os.killpg(pid, signum)
    except ProcessLookupError:
      try:
        os.kill(pid, signum)
      except ProcessLookupError:
        pass
    except PermissionError:
      pass


def serve(in_fd: int, out_fd: int) -> None:
  """Forks a child per start request until its input closes."""
  children: Set[int] = set()
  server_pid = os.getpid()

  def end(signum, frame):
    del frame
    _kill_all(children, signum)
    os._exit(0)  # pylint: disable=protected-access

  signal.signal(signal.SIGTERM, end)
  pending = b''
  while True:
    readable, _, _ = select.select([in_fd], [], [], 0.2)
    while children:
      try:
        pid, status = os.waitpid(-1, os.WNOHANG)
      except ChildProcessError:
        break
      if pid == 0:
        break
      children.discard(pid)
      _write(out_fd, {'exited': pid,
                      'code': os.waitstatus_to_exitcode(status)})
    if not readable:
      continue
    data = os.read(in_fd, 1 << 16)
    if not data:
      _kill_all(children, signal.SIGKILL)
      return
    pending += data
    while b'\n' in pending:
      line, pending = pending.split(b'\n', 1)
      request = json.loads(line)
      if 'kill' in request:
        if request['kill'] in children:
          _kill_all([request['kill']], request['signal'])
        continue
      # SIGTERM waits until the child has dropped the server's handler.
      signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
      try:
        pid = os.fork()
      except OSError as error:
        _write(out_fd, {'error': f'fork failed: {error}'})
        continue
      finally:
        if os.getpid() == server_pid:
          signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
      if pid == 0:
        _become_node(request, (in_fd, out_fd), server_pid)
      children.add(pid)
      _write(out_fd, {'pid': pid})


def main() -> None:
  # The protocol keeps fds of its own; stray prints go to the server's log.
  in_fd, out_fd = os.dup(0), os.dup(1)
  os.dup2(2, 1)
  devnull = os.open(os.devnull, os.O_RDONLY)
  os.dup2(devnull, 0)
  os.close(devnull)
  started = time.time()
  for module in PRELOAD:
    __import__(module)
  print(f'[forkserver] imported {", ".join(PRELOAD)} in '
        f'{time.time() - started:.1f} s', file=sys.stderr, flush=True)
  serve(in_fd, out_fd)


if __name__ == '__main__':
  main()

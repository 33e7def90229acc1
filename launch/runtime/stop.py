"""How a run stops: the one path, for every node and the launcher.

The signal is a file, run_dir/STOP, because the run directory is the one
thing every host of a run shares (Launchpad's own lp.stop() signals the
launcher's pid, which means nothing on another machine).

* Anyone may ask: the evaluator when the budget is spent, a failing node, the
  launcher on Ctrl-C/SIGTERM or a dead critical node. `request()` writes the
  file once; its first line says why.
* Nodes see it: `requested()` in their loops; `watch()` starts the thread
  that turns the file (or Launchpad's SIGTERM) into the node's stop event and
  ends the process `grace_s` later, even when it is blocked inside Reverb,
  after saving what it must (the learner's checkpoint, the counter's counts).
* The launcher (launch/runtime/supervisor.py, or launch/runtime/runner.py under local_mt)
  stops nodes in two waves: everything but replay and counter first, so the
  learner can checkpoint the replay table and flush its counts while both
  still serve; then replay and counter.
* Nothing on the stop path waits without a deadline: RPCs made while
  stopping go through `bounded()`, and every node also watches the
  launcher's lease (run_dir/LEASE, renewed every second): a launcher that
  died without a word still ends its nodes.
"""
import os
import threading
import time
from typing import Callable, Optional, Set

import launchpad as lp
from absl import logging

from launch.runtime import run_dir as run_dir_lib

BUDGET_SPENT = 'budget spent'
# The launcher's own end of a run its evaluator did not end in time.
BACKSTOP = 'budget backstop: the evaluator did not end the run'
UNREADABLE_REASON = 'stop'  # A STOP file with no reason in it.
GRACE_S = 5.0
# The launcher renews LEASE every LEASE_RENEW_S; nodes that see it older
# than LEASE_TIMEOUT_S stop (services a wave later).
LEASE_RENEW_S = 1.0
LEASE_TIMEOUT_S = 15.0
LAUNCHER_LOST = 'failed: the launcher stopped renewing its lease'
# Deadline of one RPC made while stopping (a save, a last count).
STOP_RPC_TIMEOUT_S = 10.0

# This process's first-wave stop: set by the watcher, read by requested().
# Under local_mt every worker node shares it, while Launchpad's own stop
# event (which ends the Courier and Reverb servers) waits for the second.
_stopping = threading.Event()
_running_workers: Set[str] = set()
_running_lock = threading.Lock()


def path(run_dir: str) -> str:
  return os.path.join(run_dir, run_dir_lib.STOP_FILE)


def request(run_dir: str, reason: str) -> None:
  """Asks every node of the run to stop; the first reason is kept."""
  _create_once(path(run_dir), reason)


def request_services(run_dir: str) -> None:
  """Asks replay and counter to stop (after everything else has)."""
  _create_once(os.path.join(run_dir, run_dir_lib.SERVICES_STOP_FILE),
               'services')


def _create_once(file_path: str, text: str) -> None:
  try:
    fd = os.open(file_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
  except FileExistsError:
    return
  except OSError as error:  # Read-only, or no inode left: nodes never see it.
    logging.error('stop request %r not written: %s', text, error)
    return
  try:
    with os.fdopen(fd, 'w') as handle:
      handle.write(f'{text}\n{time.time()}\n')
  except OSError as error:  # A full disk: the empty file still stops.
    logging.error('stop reason %r not written: %s', text, error)


def reason(run_dir: str) -> Optional[str]:
  """Why the run was asked to stop, or None while it runs."""
  try:
    with open(path(run_dir)) as handle:
      return handle.readline().strip() or UNREADABLE_REASON
  except FileNotFoundError:
    return None


def clear(run_dir: str) -> None:
  """Before a (resumed) launch: a stale file would stop it at once."""
  for name in (run_dir_lib.STOP_FILE, run_dir_lib.SERVICES_STOP_FILE,
               run_dir_lib.LEASE_FILE):
    if os.path.exists(os.path.join(run_dir, name)):
      os.remove(os.path.join(run_dir, name))


def requested(timeout_s: float = 0.0) -> bool:
  """True once this node was asked to stop (waits up to `timeout_s`)."""
  return _stopping.wait(timeout_s) or lp.wait_for_stop(0)


def reset_in_process() -> None:
  """Before a threaded (local_mt) launch: no stop left from an earlier one."""
  _stopping.clear()


def stop_workers_in_process() -> None:
  """local_mt's first wave: every worker thread's requested() turns true."""
  _stopping.set()


class running:  # pylint: disable=invalid-name
  """Marks a worker node's main loop as running (local_mt's first wave
  waits for these to end before the services stop)."""

  def __init__(self, name: str):
    self._name = name

  def __enter__(self):
    with _running_lock:
      _running_workers.add(self._name)

  def __exit__(self, *unused):
    with _running_lock:
      _running_workers.discard(self._name)


def running_workers() -> Set[str]:
  with _running_lock:
    return set(_running_workers)


def bounded(fn: Callable[[], object], what: str,
            timeout_s: float = STOP_RPC_TIMEOUT_S) -> bool:
  """Runs `fn` (an RPC on the stop path) with a deadline: True if it ended
  in time; a call still blocked (its peer gone) is logged and left behind
  on a daemon thread rather than waited on."""
  errors = []

  def call():
    try:
      fn()
    except Exception as error:  # pylint: disable=broad-except
      errors.append(error)

  thread = threading.Thread(target=call, daemon=True, name=f'bounded-{what}')
  thread.start()
  thread.join(timeout_s)
  if thread.is_alive():
    logging.warning('%s: no answer in %.0f s; not waiting for it', what,
                    timeout_s)
    return False
  if errors:
    logging.warning('%s failed: %s', what, errors[0])
    return False
  return True


def renew_lease(run_dir: str) -> None:
  """The launcher's heartbeat: its nodes stop when it stops renewing."""
  lease = os.path.join(run_dir, run_dir_lib.LEASE_FILE)
  with open(lease, 'a'):
    pass
  os.utime(lease)


class LeaseRenewer:
  """Renews the launcher's lease from a thread of its own, for as long as the
  `with` block runs: nothing the launcher's main loop waits on (starting a
  node process, a stopping wave, a slow disk) makes a live launcher look
  dead to its nodes; only the process's end does."""

  def __init__(self, run_dir: str, period_s: float = LEASE_RENEW_S):
    self._run_dir = run_dir
    self._period_s = period_s
    self._done = threading.Event()
    self._thread = threading.Thread(target=self._loop, daemon=True,
                                    name='lease-renewer')

  def __enter__(self) -> 'LeaseRenewer':
    renew_lease(self._run_dir)
    self._thread.start()
    return self

  def __exit__(self, *exc_info) -> None:
    self._done.set()
    self._thread.join()

  def _loop(self) -> None:
    while not self._done.wait(self._period_s):
      try:
        renew_lease(self._run_dir)
      except OSError as error:  # A full disk: try again next period.
        logging.warning('renewing the lease failed: %s', error)


class Beacon:
  """A file a node keeps re-stamping while it lives. Silence is measured on
  this process's monotonic clock from the stamp's last change (any change:
  another machine's clock or a clock step does not matter); before the
  first change since the node started, from its start if `from_start`,
  else not at all (a node still starting has not begun to beat)."""

  def __init__(self, path: str, from_start: bool):
    self._path = path
    self._seen = self._stamp()
    self._since = time.monotonic() if from_start else None

  def exists(self) -> bool:
    return self._seen is not None

  def _stamp(self):
    try:
      status = os.stat(self._path)
      return status.st_ino, status.st_mtime_ns
    except FileNotFoundError:
      return None

  def silent_s(self) -> Optional[float]:
    stamp, now = self._stamp(), time.monotonic()
    if stamp != self._seen:
      self._seen, self._since = stamp, now
    return None if self._since is None else now - self._since


class LeaseWatch:
  """Whether the launcher's lease went unrenewed for `timeout_s`: a Beacon
  counted from the watcher's start, so neither a step of the wall clock nor
  another host's clock (on shared storage the file server stamps mtimes)
  moves the verdict. No lease at all: never expired (a node run outside a
  launcher, e.g. in a test)."""

  def __init__(self, run_dir: str, timeout_s: float = LEASE_TIMEOUT_S):
    self._beacon = Beacon(os.path.join(run_dir, run_dir_lib.LEASE_FILE),
                          from_start=True)
    self._timeout_s = timeout_s

  def expired(self) -> bool:
    silent = self._beacon.silent_s()
    return self._beacon.exists() and silent > self._timeout_s


def watch(run_dir: str, in_process: bool,
          before_exit: Optional[Callable[[], None]] = None,
          grace_s: float = GRACE_S, service: bool = False) -> None:
  """Starts the node's stop watcher (call from the node's main thread).

  Sets the node's stop when run_dir/STOP appears (a service: when
  STOP.services does) or the launcher's lease expires (a service: twice the
  timeout, so the learner can still save into it), so `requested()` answers
  for every signal. Out of process, also ends the process `grace_s` later
  (every CSV row is already on disk; `before_exit` may save state; a service
  saves first, while its main loop still serves); in process (local_mt: one
  launcher process) a worker only sets the shared first-wave stop, and a
  service, after saving, Launchpad's stop event (the second wave).
  """
  stop_event = lp.stop_event()  # Only reachable from the node's own thread.
  trigger = os.path.join(run_dir, run_dir_lib.SERVICES_STOP_FILE if service
                         else run_dir_lib.STOP_FILE)
  lease = LeaseWatch(run_dir, LEASE_TIMEOUT_S * (2 if service else 1))

  def run():
    while not (stop_event.wait(0.5) or os.path.exists(trigger)):
      if lease.expired():
        request(run_dir, LAUNCHER_LOST)
        break
    if service and before_exit:
      before_exit()
    _stopping.set()
    if in_process and not service:
      return  # The launcher's relay ends the servers after this wave.
    stop_event.set()
    if in_process:
      return
    time.sleep(grace_s)
    if before_exit and not service:
      before_exit()
    os._exit(0)  # pylint: disable=protected-access

  threading.Thread(target=run, daemon=True, name='stop-watcher').start()

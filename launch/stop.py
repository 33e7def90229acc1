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
* The launcher (launch/supervisor.py) stops nodes in two waves: everything
  but replay and counter first, so the learner can checkpoint the replay
  table and flush its counts while both still serve; then replay and counter.
"""
import os
import threading
import time
from typing import Callable, Optional

import launchpad as lp

STOP_FILE = 'STOP'
# The second wave: written by the launcher once every other node is gone.
SERVICES_STOP_FILE = 'STOP.services'
BUDGET_SPENT = 'budget spent'
GRACE_S = 5.0


def path(run_dir: str) -> str:
  return os.path.join(run_dir, STOP_FILE)


def request(run_dir: str, reason: str) -> None:
  """Asks every node of the run to stop; the first reason is kept."""
  _create_once(path(run_dir), reason)


def request_services(run_dir: str) -> None:
  """Asks replay and counter to stop (after everything else has)."""
  _create_once(os.path.join(run_dir, SERVICES_STOP_FILE), 'services')


def _create_once(file_path: str, text: str) -> None:
  try:
    fd = os.open(file_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
  except FileExistsError:
    return
  with os.fdopen(fd, 'w') as handle:
    handle.write(f'{text}\n{time.time()}\n')


def reason(run_dir: str) -> Optional[str]:
  """Why the run was asked to stop, or None while it runs."""
  try:
    with open(path(run_dir)) as handle:
      return handle.readline().strip() or 'stop'
  except FileNotFoundError:
    return None


def clear(run_dir: str) -> None:
  """Before a (resumed) launch: a stale file would stop it at once."""
  for name in (STOP_FILE, SERVICES_STOP_FILE):
    if os.path.exists(os.path.join(run_dir, name)):
      os.remove(os.path.join(run_dir, name))


def requested(timeout_s: float = 0.0) -> bool:
  """True once this node was asked to stop (waits up to `timeout_s`)."""
  return lp.wait_for_stop(timeout_s)


def watch(run_dir: str, in_process: bool,
          before_exit: Optional[Callable[[], None]] = None,
          grace_s: float = GRACE_S, service: bool = False) -> None:
  """Starts the node's stop watcher (call from the node's main thread).

  Sets the node's stop event when run_dir/STOP appears (a service: when
  STOP.services does), so `requested()` answers for both signals. Out of
  process, also ends the process `grace_s` later (every CSV row is already on
  disk; `before_exit` may save state; a service saves first, while its main
  loop still serves); in process (local_mt: one launcher process) it only
  sets the event.
  """
  stop_event = lp.stop_event()  # Only reachable from the node's own thread.
  trigger = os.path.join(run_dir,
                         SERVICES_STOP_FILE if service else STOP_FILE)

  def run():
    while not (stop_event.wait(0.5) or os.path.exists(trigger)):
      pass
    if service and before_exit:
      before_exit()
    stop_event.set()
    if in_process:
      return
    time.sleep(grace_s)
    if before_exit and not service:
      before_exit()
    os._exit(0)  # pylint: disable=protected-access

  threading.Thread(target=run, daemon=True, name='stop-watcher').start()

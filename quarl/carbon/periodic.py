"""Call a function every few seconds on a daemon thread until stopped.

A killed process runs no exit hooks, so anything that must survive a kill
(emissions rows, per-node CPU seconds) has to reach disk while the run is
still going; this is the one place that does the repeating.
"""
import logging
import threading
from typing import Callable

_log = logging.getLogger(__name__)


class PeriodicCall:
  """Runs `fn` every `interval_s` seconds; a failing call is logged, not fatal."""

  def __init__(self, fn: Callable[[], object], interval_s: float, name: str):
    if interval_s <= 0:
      raise ValueError(f'interval_s must be positive, got {interval_s}')
    self._fn = fn
    self._interval_s = interval_s
    self._stopped = threading.Event()
    self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

  def start(self) -> None:
    self._thread.start()

  def stop(self) -> None:
    """Stops the loop and waits for a call in progress to finish."""
    self._stopped.set()
    if self._thread.is_alive() and self._thread is not threading.current_thread():
      self._thread.join()

  def _loop(self) -> None:
    while not self._stopped.wait(self._interval_s):
      try:
        self._fn()
      except Exception:  # pylint: disable=broad-except
        # One failed write (full disk, removed dir) must not end the measuring.
        _log.exception('periodic call %s failed', self._thread.name)

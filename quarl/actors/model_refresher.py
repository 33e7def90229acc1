"""Keeps an actor's LiteRT policy current without stalling its env loop.

A background thread polls the model source (the quantizer node) for a newer
(version, bytes, learner step) reply and builds the new interpreter off the env-loop thread;
the swap is a single reference assignment. Bytes that fail to load are
counted and the previous model stays in use: one bad publish must not take
down every actor. Every model is first loaded and run in a ModelProbe child,
so bytes that would make LiteRT abort cost a child process, not this one.
"""
import threading
import time
from typing import Callable, Optional, Tuple

from absl import logging

from quarl.litert import InvalidModelError
from quarl.litert import LiteRTPolicy
from quarl.litert import ModelProbe

# fetch(known_version) -> (version, model_bytes, learner_step) when newer,
# else None; learner_step is the learner's step the model was made at.
ModelFetcher = Callable[[int], Optional[Tuple[int, bytes, int]]]


class ModelRefresher:
  """Holds the newest loadable policy; refreshes it on a background thread."""

  def __init__(self, fetch: ModelFetcher, poll_period_s: float = 0.5,
               num_threads: int = 1, probe: Optional[ModelProbe] = None):
    self._fetch = fetch
    self._probe = probe or ModelProbe()
    self._poll_period_s = poll_period_s
    self._num_threads = num_threads
    self._policy: Optional[LiteRTPolicy] = None
    self.version = -1  # Version of the policy in use.
    self.learner_step = -1  # The learner step it was made at.
    self._newest_seen = -1  # Includes rejected versions, so they're skipped.
    self.load_failures = 0
    self.fetch_failures = 0
    self.refresh_s = 0.0  # Time spent fetching + loading, off the env loop.
    self._stop = threading.Event()
    self._ready = threading.Event()
    self._thread = threading.Thread(target=self._loop, daemon=True,
                                    name='model-refresher')

  @property
  def policy(self) -> LiteRTPolicy:
    return self._policy

  def start(self) -> 'ModelRefresher':
    self._thread.start()
    return self

  def wait_for_first_model(self, timeout_s: float) -> bool:
    """True once a model is loaded; False if none arrived within timeout_s."""
    return self._ready.wait(timeout_s)

  def stop(self) -> None:
    self._stop.set()
    self._probe.close()

  def refresh_once(self) -> bool:
    """One poll; returns True when a newer model was installed."""
    start = time.perf_counter()
    try:
      reply = self._fetch(self._newest_seen)
    except Exception as error:  # pylint: disable=broad-except
      # The source may be restarting; keep acting with what we have.
      self.fetch_failures += 1
      logging.warning('model fetch failed: %s', error)
      return False
    installed = False
    if reply is not None:
      version, model_bytes, learner_step = reply
      self._newest_seen = max(self._newest_seen, int(version))
      try:
        self._probe.check(model_bytes)
        self._policy = LiteRTPolicy(model_bytes, self._num_threads)
        self.version = int(version)
        self.learner_step = int(learner_step)
        installed = True
        self._ready.set()
      except InvalidModelError as error:
        self.load_failures += 1
        logging.warning('model version %s rejected: %s', version, error)
    self.refresh_s += time.perf_counter() - start
    return installed

  def _loop(self) -> None:
    while not self._stop.is_set():
      self.refresh_once()
      self._stop.wait(self._poll_period_s)

"""Proves a model loads and runs before this process touches it.

LiteRT answers some malformed models (a requantization multiplier out of
range, for one) with abort() inside allocate_tensors(), not an exception, so
the only safe first load is in another process. ModelProbe keeps one small
child (numpy + LiteRT, no TensorFlow) alive and sends it each new model with
a few observations; if the child aborts, hangs past the timeout or refuses,
the model is refused here and the child is replaced for the next request.
A new child says when it is ready, and only then does a model's clock start:
on a loaded machine Python's own start-up can take longer than any model.
"""
import io
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Optional

import numpy as np

from quarl.litert import framing
from quarl.litert.interpreter import InvalidModelError

DEFAULT_TIMEOUT_S = 30.0
STARTUP_TIMEOUT_S = 300.0
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _describe_exit(returncode: int) -> str:
  if returncode < 0:
    try:
      return f'LiteRT killed its process with {signal.Signals(-returncode).name}'
    except ValueError:
      return f'LiteRT killed its process with signal {-returncode}'
  return f'the LiteRT probe process exited with code {returncode}'


class ModelProbe:
  """Runs models in a disposable child; thread-safe, one request at a time."""

  def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S):
    self._timeout_s = timeout_s
    self._lock = threading.Lock()
    self._child: Optional[subprocess.Popen] = None

  def run(self, model_bytes: bytes, observations: np.ndarray) -> np.ndarray:
    """The model's outputs on each observation row, computed in the child
    (no rows: one all-zero observation of the model's own input size).

    Raises:
      InvalidModelError: LiteRT refused, aborted on or timed out on the model.
    """
    observations = np.asarray(observations, np.float32)
    request = io.BytesIO()
    np.save(request, observations, allow_pickle=False)
    with self._lock:
      child = self._ensure_child()
      try:
        framing.write_frame(child.stdin, bytes(model_bytes))
        framing.write_frame(child.stdin, request.getvalue())
        reply = self._read_reply(child, self._timeout_s)
      except BrokenPipeError:
        reply = b''
      if not reply:
        self._child = None
        raise InvalidModelError(self._end(child, timed_out=reply is None))
    status, payload = reply[:1], reply[1:]
    if status != framing.OK:
      raise InvalidModelError(payload.decode(errors='replace'))
    return np.load(io.BytesIO(payload), allow_pickle=False)

  def check(self, model_bytes: bytes) -> None:
    """Raises InvalidModelError unless the model loads and runs (on zeros)."""
    self.run(model_bytes, np.zeros((0, 0), np.float32))

  def close(self) -> None:
    with self._lock:
      if self._child is not None:
        self._child.stdin.close()
        self._child.wait(timeout=5)
        self._child = None

  def _ensure_child(self) -> subprocess.Popen:
    if self._child is None:
      env = dict(os.environ)
      env['PYTHONPATH'] = os.pathsep.join(
          [_PACKAGE_ROOT] + [p for p in [env.get('PYTHONPATH')] if p])
      # stderr is inherited: LiteRT's own message lands in the node's log.
      child = subprocess.Popen(
          [sys.executable, '-m', 'quarl.litert.probe_worker'],
          stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
      ready = self._read_reply(child, STARTUP_TIMEOUT_S)
      if ready != framing.READY:
        if ready is None:
          child.kill()
        code = child.wait()
        raise InvalidModelError(
            f'the LiteRT probe process did not start within '
            f'{STARTUP_TIMEOUT_S:g}s' if ready is None else
            f'the LiteRT probe process failed to start ({_describe_exit(code)})')
      self._child = child
    return self._child

  @staticmethod
  def _read_reply(child: subprocess.Popen,
                  timeout_s: float) -> Optional[bytes]:
    """One reply frame; b'' if the child closed its end, None if it ran out
    of time."""
    deadline = time.monotonic() + timeout_s
    fd = child.stdout.fileno()
    buffer = b''
    while True:
      if len(buffer) >= 8:
        size = int.from_bytes(buffer[:8], 'little')
        if len(buffer) >= 8 + size:
          return buffer[8:8 + size]
      remaining = deadline - time.monotonic()
      if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
        return None
      chunk = os.read(fd, 1 << 20)
      if not chunk:
        return b''
      buffer += chunk

  def _end(self, child: subprocess.Popen, timed_out: bool) -> str:
    """Reaps a child that gave no answer and says why it gave none."""
    if timed_out:
      child.kill()
      child.wait()
      return f'LiteRT gave no answer within {self._timeout_s:g}s'
    # It closed its end: dying (abort() may still be writing its report).
    return _describe_exit(child.wait())

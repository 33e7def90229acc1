"""A discrete-action environment that runs in another Python process.

`RemoteEnvironment` starts `pipe_server.py` under a given interpreter and
speaks its framed protocol over the child's stdin and stdout. Every reply
has a deadline, so a hung or dead environment ends the caller with one
line (EnvironmentServerError) instead of a wait without end.
"""
import json
import os
import select
import subprocess
import time
from typing import Optional

from acme import specs
import dm_env
import numpy as np

from quarl.envs import gym_env
from quarl.envs import pipe_server

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'pipe_server.py')
BUILD_TIMEOUT_S = 120.0
STEP_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 10.0


class EnvironmentServerError(RuntimeError):
  """The environment process failed, died or did not answer in time."""


def _observation(data: bytes) -> np.ndarray:
  return np.frombuffer(data, np.float32).copy()


class RemoteEnvironment(gym_env.GymLikeEnvironment):
  """`factory(**kwargs)` ('module:callable', a gym-API environment with a
  Discrete action space) built by `python` in a child process, seen as a
  dm_env.Environment with flat float32 observations; episode ends follow
  GymEnvironment (terminated: discount 0, truncated: discount 1).

  `extra_env` is added to the child's environment (e.g. PYTHONPATH);
  errors begin with `name` (default: the factory).
  """

  def __init__(self, python: str, factory: str, kwargs: dict,
               name: Optional[str] = None,
               extra_env: Optional[dict] = None,
               step_timeout_s: float = STEP_TIMEOUT_S,
               build_timeout_s: float = BUILD_TIMEOUT_S):
    self._name = name or factory
    self._step_timeout_s = step_timeout_s
    self._process = subprocess.Popen(
        [python, SERVER, factory, json.dumps(kwargs)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env={**os.environ, **(extra_env or {})})
    size, num_actions = self._reply(build_timeout_s)
    self._observation_spec = specs.Array((size,), np.float32, 'observation')
    self._action_spec = specs.DiscreteArray(num_actions, np.int32,
                                            name='action')
    self._reset_next_step = True

  def _reply(self, timeout_s: float):
    """The payload of the server's next frame, within `timeout_s`."""
    stream = self._process.stdout
    ready, _, _ = select.select([stream], [], [], timeout_s)
    if not ready:
      self._kill()
      raise EnvironmentServerError(
          f'{self._name}: no answer from the environment process in '
          f'{timeout_s:g} s; it was killed')
    frame = pipe_server.read_frame(stream)
    if frame is None:
      code = self._process.wait(timeout=CLOSE_TIMEOUT_S)
      raise EnvironmentServerError(
          f'{self._name}: the environment process ended (exit code {code})')
    status, payload = frame
    if status != 'ok':
      raise EnvironmentServerError(f'{self._name}: {payload}')
    return payload

  def _call(self, command: str, argument=None):
    try:
      pipe_server.write_frame(self._process.stdin, (command, argument))
    except (BrokenPipeError, ValueError) as error:  # ValueError: closed.
      raise EnvironmentServerError(
          f'{self._name}: the environment process is gone ({error})'
      ) from error
    return self._reply(self._step_timeout_s)

  def reset(self) -> dm_env.TimeStep:
    self._reset_next_step = False
    return dm_env.restart(_observation(self._call('reset')))

  def step(self, action) -> dm_env.TimeStep:
    if self._reset_next_step:
      return self.reset()
    observation, reward, terminated, truncated = self._call(
        'step', int(action))
    self._reset_next_step = terminated or truncated
    return gym_env.timestep(_observation(observation), reward, terminated,
                            truncated)

  def _kill(self) -> None:
    self._process.kill()
    self._process.wait(timeout=CLOSE_TIMEOUT_S)

  def close(self) -> None:
    """Asks the server to close its environment; kills it past a deadline."""
    if self._process.poll() is not None:
      return
    try:
      pipe_server.write_frame(self._process.stdin, ('close', None))
      self._process.stdin.close()
      self._process.wait(timeout=CLOSE_TIMEOUT_S)
    except (BrokenPipeError, subprocess.TimeoutExpired):
      self._kill()

  def __del__(self):
    process = getattr(self, '_process', None)
    if process is not None and process.poll() is None:
      process.kill()

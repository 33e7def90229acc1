"""Serves one gym-API environment over this process's stdin and stdout.

Run by path under another Python (`python pipe_server.py FACTORY KWARGS`),
so it imports nothing of QuaRL: only the standard library, NumPy and the
environment's own package. Google Research Football is the reason: its
engine builds against Debian's Boost.Python for Python 3.11, which the 3.10
stack can never import. `remote_env.RemoteEnvironment` is the other end.

Frames are pickles behind an 8-byte big-endian length. The client sends
('reset', None), ('step', action) or ('close', None); the server answers
('ok', payload) or ('error', one line). The first frame the server writes
is the spec: ('ok', (observation_size, num_actions)). Observations go out
as the bytes of a flat float32 array (not a pickled array: the two Pythons'
NumPy releases differ); a step's payload is (observation, reward,
terminated, truncated). Environments with the 4-tuple step API (gym < 0.26,
which Football uses) end episodes with `done`, read as terminated.

The environment may print: fd 1 is pointed at stderr before it is built,
and frames go out on a private copy of the original stdout.
"""
import importlib
import json
import os
import pickle
import struct
import sys

import numpy as np

HEADER = struct.Struct('>Q')


def read_frame(stream):
  """The next frame's object, or None at end of stream."""
  header = stream.read(HEADER.size)
  if len(header) < HEADER.size:
    return None
  size = HEADER.unpack(header)[0]
  data = stream.read(size)
  return pickle.loads(data) if len(data) == size else None


def write_frame(stream, value) -> None:
  data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
  stream.write(HEADER.pack(len(data)) + data)
  stream.flush()


def _flat(observation) -> bytes:
  return np.asarray(observation, np.float32).tobytes()


def _reset(environment):
  result = environment.reset()
  # gym >= 0.26 and gymnasium return (observation, info).
  return _flat(result[0] if isinstance(result, tuple) else result)


def _step(environment, action):
  result = environment.step(action)
  if len(result) == 5:
    observation, reward, terminated, truncated, _ = result
  else:
    observation, reward, terminated, _ = result
    truncated = False
  return _flat(observation), float(reward), bool(terminated), bool(truncated)


def serve(factory: str, kwargs: dict, requests, replies) -> None:
  """Builds factory(**kwargs) ('module:callable') and answers requests
  until 'close' or the end of the request stream."""
  module, _, name = factory.partition(':')
  environment = getattr(importlib.import_module(module), name)(**kwargs)
  size = int(np.prod(environment.observation_space.shape))
  write_frame(replies, ('ok', (size, int(environment.action_space.n))))
  try:
    while True:
      request = read_frame(requests)
      if request is None or request[0] == 'close':
        return
      command, argument = request
      try:
        if command == 'reset':
          payload = _reset(environment)
        elif command == 'step':
          payload = _step(environment, int(argument))
        else:
          raise ValueError(f'unknown request {command!r}')
      except Exception as error:  # pylint: disable=broad-except
        write_frame(replies, ('error', f'{type(error).__name__}: {error}'))
        continue
      write_frame(replies, ('ok', payload))
  finally:
    environment.close()


def main(argv) -> int:
  replies = os.fdopen(os.dup(1), 'wb')
  os.dup2(2, 1)  # What the environment prints goes to stderr.
  try:
    serve(argv[1], json.loads(argv[2]), sys.stdin.buffer, replies)
  except BrokenPipeError:  # The client went away: nothing to answer.
    return 0
  except Exception as error:  # pylint: disable=broad-except
    write_frame(replies, ('error', f'{type(error).__name__}: {error}'))
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))

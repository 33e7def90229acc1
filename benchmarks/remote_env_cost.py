r"""What running an environment in another process costs per step.

Football runs behind quarl/envs/pipe_server.py under its own Python. This
times the same random-action steps in-process and through the pipe, side by
side in one run: for the 115-float stand-in of tests/unit/pipe_standin.py
(near-free steps, so its row is the protocol's own cost) and, when `make
football` has installed the engine, for a real Football scenario (its
in-process row runs under the Football Python, which alone can import it).

  python -m benchmarks.remote_env_cost [--steps=2000 --scenario=...]
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
from absl import app
from absl import flags

from quarl.envs import football_env
from quarl.envs import remote_env

_STEPS = flags.DEFINE_integer('steps', 2000, 'Env steps timed per row.')
_SCENARIO = flags.DEFINE_string('scenario', 'academy_empty_goal_close',
                                'Football scenario of the Football rows.')

_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), 'tests', 'unit')

# Times `steps` random steps of factory(**kwargs) in the process that runs
# it; prints seconds. Runs under either Python: NumPy and the env only.
_IN_PROCESS = '''
import importlib, json, sys, time
import numpy as np
module, _, name = sys.argv[1].partition(':')
env = getattr(importlib.import_module(module), name)(**json.loads(sys.argv[2]))
steps, rng = int(sys.argv[3]), np.random.default_rng(0)
env.reset()
start = time.perf_counter()
for _ in range(steps):
  if env.step(int(rng.integers(env.action_space.n)))[2]:
    env.reset()
print(time.perf_counter() - start)
'''


def in_process_seconds(python, factory, kwargs, steps, extra_env=None):
  output = subprocess.run(
      [python, '-c', _IN_PROCESS, factory, json.dumps(kwargs), str(steps)],
      check=True, capture_output=True, text=True,
      env={**os.environ, **(extra_env or {})}).stdout
  return float(output.strip().splitlines()[-1])


def remote_seconds(python, factory, kwargs, steps, extra_env=None):
  environment = remote_env.RemoteEnvironment(python, factory, kwargs,
                                             extra_env=extra_env)
  rng = np.random.default_rng(0)
  try:
    environment.reset()
    start = time.perf_counter()
    for _ in range(steps):
      environment.step(rng.integers(environment.action_spec().num_values))
    return time.perf_counter() - start
  finally:
    environment.close()


def main(argv):
  del argv
  steps = _STEPS.value
  standin = (sys.executable, 'pipe_standin:make', {},
             {'PYTHONPATH': _TESTS})
  rows = [('stand-in (115 floats, 19 actions)', standin)]
  python = football_env.football_python()
  if os.access(python, os.X_OK):
    rows.append((f'football:{_SCENARIO.value}',
                 (python, 'football_engine:make',
                  dict(scenario=_SCENARIO.value, seed=0),
                  {'PYTHONPATH': os.path.dirname(remote_env.SERVER)})))
  else:
    print(f'[remote_env_cost] no Football rows: {python} is missing '
          '(make football)')
  print(f'{steps} random-action steps per cell\n')
  print(f'{"environment":40} {"in-process us/step":>19} '
        f'{"through the pipe us/step":>25} {"pipe cost us/step":>18}')
  for name, (python, factory, kwargs, extra_env) in rows:
    local = in_process_seconds(python, factory, kwargs, steps, extra_env)
    remote = remote_seconds(python, factory, kwargs, steps, extra_env)
    local_us, remote_us = 1e6 * local / steps, 1e6 * remote / steps
    print(f'{name:40} {local_us:19.1f} {remote_us:25.1f} '
          f'{remote_us - local_us:18.1f}')


if __name__ == '__main__':
  app.run(main)

r"""What replay costs the actor and the learner: Acme's N-step adder (five
columns) against the packed transitions the agents use (one column, one
step per chunk; agents/packed_transitions.py).

Actor side: microseconds of this process's CPU per env step's add() into
the learner's table and its calibration mirror (server in this process, as
it must be to count its share). Learner side: client CPU per batch drawn
through the learner's tf.data pipeline from a table of `--fill`
transitions, the server in another process, as in a program. Both with
ActorQ's replay regime (uniform, FIFO, each item sampled at most 16 times).

  python -m benchmarks.replay_cost
  python -m benchmarks.replay_cost --tasks=gym:Pendulum-v1 --batch_size=64
"""
import os
import socket
import subprocess
import sys
import time

import numpy as np
import reverb
from absl import flags
from acme import datasets
from acme import specs
from acme.adders import reverb as reverb_adders

from agents import packed_transitions
from agents import replay
from agents import reverb_compat
from launch import cli
from quarl import envs

_TASKS = flags.DEFINE_list(
    'tasks', ['gym:Pendulum-v1', 'dm_control:cartpole:swingup'], 'Tasks.')
_BATCH = flags.DEFINE_integer('batch_size', 256, 'Learner batch.')
_FILL = flags.DEFINE_integer('fill', 20_000, 'Transitions in the table.')
_BATCHES = flags.DEFINE_integer('batches', 200, 'Batches timed per cell.')
cli.require_positive('batch_size', 'fill', 'batches')

N_STEP, DISCOUNT = 5, 0.99
LAYOUTS = ('acme', 'packed')
_SERVE = '--serve'


def _tables(task: str, layout: str):
  environment = envs.make_environment(task, seed=0)
  spec = specs.make_environment_spec(environment)
  signature = (reverb_adders.NStepTransitionAdder.signature(spec)
               if layout == 'acme'
               else packed_transitions.Layout(spec).signature())
  tables = [reverb.Table(name, reverb.selectors.Uniform(),
                         reverb.selectors.Fifo(), max_size=1_000_000,
                         rate_limiter=reverb.rate_limiters.MinSize(1),
                         max_times_sampled=16, signature=signature)
            for name in (replay.REPLAY_TABLE, replay.CALIBRATION_TABLE)]
  return environment, spec, tables


def _adder(client, spec, layout: str):
  tables = (replay.REPLAY_TABLE, replay.CALIBRATION_TABLE)
  if layout == 'acme':
    return reverb_adders.NStepTransitionAdder(
        reverb_compat.AdderClient(client), N_STEP, DISCOUNT,
        priority_fns={table: None for table in tables})
  return packed_transitions.NStepAdder(
      client, packed_transitions.Layout(spec), N_STEP, DISCOUNT, tables)


def _fill(environment, spec, adder, steps: int) -> float:
  """Adds `steps` random-action steps; CPU microseconds per add()."""
  rng = np.random.default_rng(0)
  timestep = environment.reset()
  adder.add_first(timestep)
  cpu = 0.0
  for _ in range(steps):
    action = envs.random_action(spec.actions, rng)
    timestep = environment.step(action)
    start = time.process_time()
    adder.add(action, timestep)
    cpu += time.process_time() - start
    if timestep.last():
      timestep = environment.reset()
      adder.add_first(timestep)
  return 1e6 * cpu / steps


def actor_us(task: str, layout: str) -> float:
  environment, spec, tables = _tables(task, layout)
  server = reverb.Server(tables)
  client = reverb.Client(f'localhost:{server.port}')
  adder = _adder(client, spec, layout)
  try:
    return _fill(environment, spec, adder, 5000)
  finally:
    del adder
    server.stop()


def _free_port() -> int:
  with socket.socket() as probe:
    probe.bind(('localhost', 0))
    return probe.getsockname()[1]


def learner_ms(task: str, layout: str) -> float:
  """Client CPU ms per batch, the server in a child process."""
  port = _free_port()
  child = subprocess.Popen(
      [sys.executable, '-m', 'benchmarks.replay_cost', _SERVE, task, layout,
       str(port)], stdout=subprocess.PIPE, text=True)
  try:
    assert child.stdout.readline().strip() == 'serving'
    environment, spec, _ = _tables(task, layout)
    client = reverb.Client(f'localhost:{port}')
    adder = _adder(client, spec, layout)
    _fill(environment, spec, adder, _FILL.value)
    del adder
    address = f'localhost:{port}'
    if layout == 'acme':
      dataset = datasets.make_reverb_dataset(
          server_address=address, table=replay.REPLAY_TABLE,
          batch_size=_BATCH.value, prefetch_size=4, num_parallel_calls=1)
    else:
      dataset = packed_transitions.dataset(
          address, replay.REPLAY_TABLE, packed_transitions.Layout(spec),
          _BATCH.value, parallel_calls=1)
    batches = iter(dataset)
    for _ in range(10):
      next(batches)
    start = time.process_time()
    for _ in range(_BATCHES.value):
      next(batches)
    return 1e3 * (time.process_time() - start) / _BATCHES.value
  finally:
    child.kill()
    child.wait(timeout=30)


def _serve(task: str, layout: str, port: str) -> None:
  _, _, tables = _tables(task, layout)
  server = reverb.Server(tables, port=int(port))
  print('serving', flush=True)
  server.wait()


def main(argv):
  del argv
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  print(f'| task | replay items | actor add() CPU us/step | learner CPU ms '
        f'per batch of {_BATCH.value} | per sample us |')
  print('|---|---|---|---|---|')
  cells = {}
  for task in _TASKS.value:
    for layout in LAYOUTS:
      cells[task, layout] = (actor_us(task, layout), learner_ms(task, layout))
      actor, learner = cells[task, layout]
      print(f'| {task} | {layout} | {actor:.0f} | {learner:.2f} | '
            f'{1e3 * learner / _BATCH.value:.1f} |', flush=True)
  for task in _TASKS.value:
    (actor_a, learner_a), (actor_p, learner_p) = (
        cells[task, 'acme'], cells[task, 'packed'])
    print(f'{task}: packed / acme: actor {actor_p / actor_a:.2f}x, '
          f'learner {learner_p / learner_a:.2f}x')


if __name__ == '__main__':
  if len(sys.argv) == 5 and sys.argv[1] == _SERVE:
    _serve(*sys.argv[2:])
  else:
    cli.run_main(main, 'replay_cost')

r"""ActorQ at the paper's shape, predicted by the pipeline model.

The shape ActorQ's authors ran: 16 actor cores with one actor each, the
learner on an accelerator of its own at L steps per second, their replay
regime (batch 256, each transition sampled at most 16 times: 16 fresh
transitions a learner step) and the 3x2048 policy. An actor's env step costs
the env step, one inference and one insert into replay; the env step and
the insert (the agents' packed N-step adder into a real Reverb table, the
learner's and the calibration mirror) are timed here per task, and
inference comes from
benchmarks/results/actor_inference.csv (benchmarks/actor_inference.py: one
thread, batch 1). launch/analysis/pipeline_model.py then gives the learner's
progress, min(L, actors x A / fresh), and int8's time-to-target speedup over
fp32_tf, for each stated learner rate L. A prediction to check against a
16-core run, not a measurement of one.

  python -m benchmarks.actorq_extrapolation
  python -m benchmarks.actorq_extrapolation --learner_rates=250,1000 \
      --tasks=dm_control:walker:walk
"""
import csv
import os
import time

import numpy as np
import reverb
from absl import flags
from acme import specs

from agents import replay
from agents.d4pg.config import D4PGConfig
from launch import cli
from launch.analysis import pipeline_model
from launch.analysis import runs as analysis
from quarl import envs

_TASKS = flags.DEFINE_list(
    'tasks', ['gym:Pendulum-v1', 'dm_control:cartpole:swingup',
              'dm_control:walker:walk', 'dm_control:cheetah:run'],
    'Tasks whose env step and insert are timed.')
_ACTORS = flags.DEFINE_integer('num_actors', 16, 'Actor cores, one actor '
                               'each (the paper: 16).')
_BATCH = flags.DEFINE_integer('batch_size', 256, 'Learner batch.')
_MAX_TIMES_SAMPLED = flags.DEFINE_integer(
    'max_times_sampled', 16, 'Samples per transition before eviction.')
_RATES = flags.DEFINE_list(
    'learner_rates', ['100', '250', '500', '1000', '2000'],
    'Learner steps per second on its accelerator (stated, not measured).')
_POLICY = flags.DEFINE_string(
    'policy', '3x2048 LayerNorm', 'actor_inference.csv policy row: 3x2048 '
    'LayerNorm (D4PG\'s torso) or 3x2048.')
_STEPS = flags.DEFINE_integer('steps', 2000, 'Env steps timed per task.')
_INFERENCE_CSV = flags.DEFINE_string(
    'inference_csv', 'benchmarks/results/actor_inference.csv',
    'Inference times (benchmarks/actor_inference.py).')
_OUT = flags.DEFINE_string('out',
                           'benchmarks/results/actorq_extrapolation.csv',
                           'CSV of the table.')
cli.require_positive('num_actors', 'batch_size', 'max_times_sampled', 'steps')


def _positive_numbers(texts) -> bool:
  try:
    return all(cli.finite_positive(float(text)) for text in texts)
  except ValueError:
    return False


flags.register_validator('learner_rates', _positive_numbers,
                         'want comma-separated numbers > 0')

PRECISIONS = ('fp32_tf', 'int8')


def inference_us(path: str, policy: str) -> dict:
  """precision -> microseconds per call, for `policy`'s rows."""
  with open(path) as handle:
    rows = [r for r in csv.DictReader(handle) if r['policy'] == policy]
  times = {r['precision']: float(r['us']) for r in rows}
  missing = [p for p in PRECISIONS if p not in times]
  if missing:
    raise cli.UsageError(f'{path} has no {policy!r} rows for {missing}: run '
                         'python -m benchmarks.actor_inference')
  return times


def env_and_insert_us(task: str, steps: int) -> tuple:
  """Microseconds per env step (random actions) and per N-step insert
  into the learner's table and its calibration mirror."""
  environment = envs.make_environment(task, seed=0)
  spec = specs.make_environment_spec(environment)
  config = D4PGConfig(max_times_sampled=16, samples_per_insert=None)
  server = reverb.Server(
      replay.transition_tables(spec, config, reverb.selectors.Uniform()))
  adder = replay.transition_adder(
      reverb.Client(f'localhost:{server.port}'), spec, config.n_step,
      config.discount)
  rng = np.random.default_rng(0)
  action_spec = spec.actions

  def random_action():
    return rng.uniform(action_spec.minimum, action_spec.maximum,
                       action_spec.shape).astype(action_spec.dtype)

  env_s = insert_s = 0.0
  timestep = environment.reset()
  adder.add_first(timestep)
  for _ in range(steps):
    action = random_action()
    start = time.perf_counter()
    timestep = environment.step(action)
    env_s += time.perf_counter() - start
    start = time.perf_counter()
    if timestep.first():
      adder.add_first(timestep)
    else:
      adder.add(action, timestep)
    insert_s += time.perf_counter() - start
    if timestep.last():
      timestep = environment.reset()
      adder.add_first(timestep)
  server.stop()
  return 1e6 * env_s / steps, 1e6 * insert_s / steps


def main(argv):
  del argv
  try:
    inference = inference_us(_INFERENCE_CSV.value, _POLICY.value)
    for task in _TASKS.value:
      envs.validate_environment_name(task)
  except (cli.UsageError, ValueError, OSError) as error:
    cli.usage_exit('actorq_extrapolation', str(error))
  rates = [float(r) for r in _RATES.value]
  fresh = _BATCH.value / _MAX_TIMES_SAMPLED.value
  header = (['task', 'env_us', 'insert_us', 'fp32_tf_us', 'int8_us',
             'fp32_tf_actor_steps_per_s', 'int8_actor_steps_per_s'] +
            [f'speedup_L{r:g}' for r in rates] +
            [f'bound_fp32_tf_L{r:g}' for r in rates])
  rows = []
  for task in _TASKS.value:
    env_us, insert_us = env_and_insert_us(task, _STEPS.value)
    per_actor = {p: 1e6 / (env_us + inference[p] + insert_us)
                 for p in PRECISIONS}
    supply = {p: _ACTORS.value * rate for p, rate in per_actor.items()}
    speedups = [pipeline_model.speedup(rate, supply['fp32_tf'], supply['int8'],
                                       fresh) for rate in rates]
    bounds = ['actor' if supply['fp32_tf'] / fresh < rate else 'learner'
              for rate in rates]
    rows.append([task, env_us, insert_us, inference['fp32_tf'],
                 inference['int8'], per_actor['fp32_tf'], per_actor['int8'],
                 *speedups, *bounds])
    print(f'[actorq_extrapolation] {task}: env {env_us:.0f} us, insert '
          f'{insert_us:.0f} us', flush=True)
  os.makedirs(os.path.dirname(_OUT.value) or '.', exist_ok=True)
  with open(_OUT.value, 'w', newline='') as handle:
    writer = csv.writer(handle)
    writer.writerow(header)
    writer.writerows(rows)
  print(f'\n{_ACTORS.value} actors, {_POLICY.value} policy, batch '
        f'{_BATCH.value}, max_times_sampled {_MAX_TIMES_SAMPLED.value} '
        f'({fresh:g} fresh transitions a learner step); predicted int8 / '
        'fp32_tf time-to-target speedup at each learner rate L (steps/s):\n')
  print(analysis.markdown_table(
      ['task', 'env us', 'insert us', 'fp32_tf us', 'int8 us',
       'fp32_tf steps/s/actor', 'int8 steps/s/actor'] +
      [f'L={r:g}' for r in rates],
      [[r[0]] + [f'{value:.0f}' for value in r[1:7]] +
       [f'{s:.2f}x ({b})' for s, b in zip(r[7:7 + len(rates)],
                                          r[7 + len(rates):])]
       for r in rows]))
  print('(bound: the fp32_tf run\'s slower stage; int8 gains only where it '
        'is the actors)')


if __name__ == '__main__':
  cli.run_main(main, 'actorq_extrapolation')

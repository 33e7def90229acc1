r"""Learner throughput: TF graph vs XLA, per agent and compression, one run.

Standalone: each agent's real learner (Reverb-fed, GST/prune constraint
inside the step) runs its compiled update on one fixed sample, so only the
update is timed (steps/s and process CPU ms per step), and under XLA also on
a fresh Reverb sample each step, as in a run (from a table of 10,000
transitions). Then the whole program: learner steps per wall second of a
D4PG Pendulum int8 run (start-up included) with --learner_compile=graph and
xla, and the learner process's CPU per step there against the standalone
update's at the program's batch. --program_regime picks the program: `acme`
(the small preset: 2 actors, batch 64, a replay ratio) or `authors`
(ActorQ's: 4 free-running actors, max_times_sampled 16, batch 256, the
learner pinned to a core of its own). Prints a markdown table with ratios;
the last line is `learner xla/graph min ratio: R`, the smallest standalone
ratio over agents (at the small preset's batch, when measured).

  python -m benchmarks.learner_step [--seconds=2 --program_seconds=120]
  python -m benchmarks.learner_step --agents=d4pg --batches=256 \
      --program_regime=authors --program_seconds=150
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf
from absl import flags
from acme import specs
from acme.utils import counting
from acme.utils import loggers

import agents
from launch import cli
from launch.nodes import threads
from quarl import compression
from quarl import envs

_SECONDS = flags.DEFINE_float('seconds', 2.0, 'Timed seconds per cell.')
_BATCHES = flags.DEFINE_list('batches', ['small', '256'],
                             "Batch sizes ('small': the preset's).")
_AGENTS = flags.DEFINE_list('agents', ['d4pg', 'dqn', 'td3'], 'Agents.')
_PROGRAM_SECONDS = flags.DEFINE_float(
    'program_seconds', 120.0, 'Budget of each whole-program run (0: skip).')
_PROGRAM_REGIME = flags.DEFINE_enum(
    'program_regime', 'acme', ['acme', 'authors'],
    'The whole program\'s regime (see the module docstring).')
_OUT = flags.DEFINE_string('out_dir', 'runs/learner_step',
                           'Run directories of the program comparison.')

ENVS = {'d4pg': 'gym:Pendulum-v1', 'td3': 'gym:Pendulum-v1',
        'dqn': 'gym:CartPole-v1'}
COMPRESSIONS = ('none', 'gst', 'prune')
MODES = ('graph', 'xla')
# launch.train flags of each program regime, and its learner batch.
PROGRAM_REGIMES = {
    'acme': (['--num_actors=2'], 64),
    'authors': (['--num_actors=4', '--d4pg.max_times_sampled=16',
                 '--d4pg.batch_size=256', '--pin_cpus'], 256),
}
# Transitions in the table the sampled update draws from.
SAMPLED_TABLE_SIZE = 10_000


def _replay(agent, environment, spec):
  """A real Reverb server holding random-action transitions."""
  sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'tests',
                                  'unit'))
  from replay_helpers import serve_replay  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  return serve_replay(agent, environment, SAMPLED_TABLE_SIZE,
                      lambda: envs.random_action(spec.actions, rng))


def _controller(kind, bundle):
  """GST in its circulant phase; pruning with its masks in force."""
  controller = compression.make_controller(
      kind, bundle.compressible_layers, s_final=0.9, begin_step=0,
      end_step=100, block_size=4)
  controller.sync(200 if kind == 'prune' else 0)
  return controller


def time_update(agent, client, kind: str, mode: str, seconds: float,
                sampling: bool = False):
  """(steps/s, CPU ms per step) of the compiled update on a fixed sample,
  or with `sampling` on a fresh Reverb sample each step (as in a run)."""
  tf.random.set_seed(0)
  bundle = agent.make_learner(client, counting.Counter(), loggers.NoOpLogger(),
                              compile_mode=mode)
  learner = bundle.learner
  learner.constrain = _controller(kind, bundle).constrain
  samples = learner._samples  # pylint: disable=protected-access
  sample = next(samples)
  for _ in range(10):  # Traces and compiles.
    learner._update(sample)  # pylint: disable=protected-access
  steps, wall, cpu = 0, time.perf_counter(), time.process_time()
  while time.perf_counter() - wall < seconds or steps < 20:
    learner._update(next(samples) if sampling else sample)  # pylint: disable=protected-access
    steps += 1
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  return steps / wall, 1e3 * cpu / steps


def standalone(seconds: float):
  rows = []
  for name in _AGENTS.value:
    agent_class, config_for_env = agents.lookup(name)
    environment = envs.make_environment(ENVS[name], 0)
    spec = specs.make_environment_spec(environment)
    for batch in _BATCHES.value:
      overrides = {} if batch == 'small' else {'batch_size': int(batch)}
      agent = agent_class(spec, config_for_env(
          ENVS[name], samples_per_insert=None, min_replay_size=1,
          **overrides))
      server, client = _replay(agent, environment, spec)
      for kind in COMPRESSIONS:
        cells = {mode: time_update(agent, client, kind, mode, seconds)
                 for mode in MODES}
        sampled = time_update(agent, client, kind, 'xla', seconds,
                              sampling=True)
        rows.append(dict(agent=name, batch=agent.config.batch_size,
                         preset_batch=batch == 'small', compression=kind,
                         **{f'{m}_steps_s': cells[m][0] for m in MODES},
                         **{f'{m}_cpu_ms': cells[m][1] for m in MODES},
                         sampled_cpu_ms=sampled[1]))
        print(f'  {name} batch {agent.config.batch_size} {kind}: '
              f'graph {cells["graph"][0]:.0f}/s, xla {cells["xla"][0]:.0f}/s',
              flush=True)
      server.stop()
  return rows


def program(seconds: float, regime: str):
  """Learner steps per wall second of a whole D4PG Pendulum int8 run."""
  rates = {}
  for mode in MODES:
    run_dir = os.path.join(_OUT.value, f'pendulum_int8_{regime}_{mode}')
    subprocess.run(
        [sys.executable, '-m', 'launch.train', '--agent=d4pg',
         '--env=gym:Pendulum-v1', '--actor_precision=int8',
         *PROGRAM_REGIMES[regime][0],
         f'--max_seconds={seconds}', f'--learner_compile={mode}',
         f'--run_dir={run_dir}', '--overwrite'],
        check=True, capture_output=True)
    with open(os.path.join(run_dir, 'summary.json')) as handle:
      summary = json.load(handle)
    rates[mode] = (summary['learner_steps'] / summary['wall_s'],
                   summary['learner_steps'], summary['best_return'],
                   (summary.get('pipeline') or {}).get(
                       'learner_cpu_ms_per_step', float('nan')))
  return rates


def main(argv):
  del argv
  plan = threads.plan(threads.machine_cores(), num_actors=2)
  tf.config.threading.set_intra_op_parallelism_threads(plan.learner_threads)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  print(f'{threads.machine_cores()} cores; learner TF threads '
        f'{plan.learner_threads} (the program\'s thread plan)', flush=True)
  rows = standalone(_SECONDS.value)
  lines = ['| agent | batch | compression | graph steps/s | xla steps/s | '
           'xla/graph | graph CPU ms/step | xla CPU ms/step | '
           'cost vs none (xla) | xla CPU ms/step, sampling Reverb |',
           '|---|---|---|---|---|---|---|---|---|---|']
  for row in rows:
    base = next(r for r in rows if r['agent'] == row['agent'] and
                r['batch'] == row['batch'] and r['compression'] == 'none')
    lines.append(
        f'| {row["agent"]} | {row["batch"]} | {row["compression"]} | '
        f'{row["graph_steps_s"]:.0f} | {row["xla_steps_s"]:.0f} | '
        f'{row["xla_steps_s"] / row["graph_steps_s"]:.2f}x | '
        f'{row["graph_cpu_ms"]:.2f} | {row["xla_cpu_ms"]:.2f} | '
        f'{row["xla_cpu_ms"] / base["xla_cpu_ms"] - 1:+.0%} | '
        f'{row["sampled_cpu_ms"]:.2f} |')
  print('\n'.join(lines))
  if _PROGRAM_SECONDS.value:
    regime = _PROGRAM_REGIME.value
    flags_, program_batch = PROGRAM_REGIMES[regime]
    rates = program(_PROGRAM_SECONDS.value, regime)
    print(f'\nWhole program, D4PG gym:Pendulum-v1 int8, {regime} regime '
          f'({" ".join(flags_)}), {_PROGRAM_SECONDS.value:.0f} s (start-up '
          'included):\n')
    print('| learner | learner steps | learner steps / wall s | best return '
          '| learner process CPU ms/step (once stepping) |')
    print('|---|---|---|---|---|')
    for mode in MODES:
      rate, steps, best, cpu_ms = rates[mode]
      print(f'| {mode} | {steps} | {rate:.1f} | {best:.1f} | {cpu_ms:.2f} |')
    print(f'program xla/graph ratio: '
          f'{rates["xla"][0] / rates["graph"][0]:.2f}x')
    alone = next((r for r in rows if r['agent'] == 'd4pg' and
                  r['batch'] == program_batch and
                  r['compression'] == 'none'), None)
    if alone:
      # The learner process's CPU once stepping (start-up apart, as the
      # standalone update's warm-up is), against the bare update's.
      print(f'd4pg learner CPU per step, in the program / standalone (xla): '
            f'{rates["xla"][3]:.2f} / {alone["xla_cpu_ms"]:.2f} ms = '
            f'{rates["xla"][3] / alone["xla_cpu_ms"]:.2f}x; standalone '
            f'sampling Reverb {alone["sampled_cpu_ms"]:.2f} ms: in the '
            f'program / that {rates["xla"][3] / alone["sampled_cpu_ms"]:.2f}x')
  ratios = [r['xla_steps_s'] / r['graph_steps_s'] for r in rows
            if r['preset_batch']]
  if ratios:
    print(f'learner xla/graph min ratio: {min(ratios):.2f}')


if __name__ == '__main__':
  cli.run_main(main, 'learner_step')

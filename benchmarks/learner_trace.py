r"""Where a learner's start-up CPU goes before its first step: build, trace
and XLA compile of its update, each in process CPU seconds.

The learner is the real one, fed by a real Reverb server (as in
benchmarks.learner_step), and traced on a stand-in batch shaped like a
sample, as `compile_ahead()` does in a run. Prints one markdown row per
agent (`--agents` is benchmarks.learner_step's flag). Agents after the first
reuse what AutoGraph converted for it, so only the first row is a fresh
learner's start-up.

  python -m benchmarks.learner_trace [--agents=d4pg --batch_size=256]
"""
import time

import tensorflow as tf
from absl import app
from absl import flags
from acme import specs
from acme.utils import counting
from acme.utils import loggers

import agents
from benchmarks import learner_step
from quarl import envs

_BATCH = flags.DEFINE_integer('batch_size', 256, 'Learner batch size.')


def _cpu_s(action) -> float:
  start = time.process_time()
  action()
  return time.process_time() - start


def measure(name: str, batch_size: int) -> dict:
  agent_class, config_for_env = agents.lookup(name)
  environment = envs.make_environment(learner_step.ENVS[name], 0)
  spec = specs.make_environment_spec(environment)
  agent = agent_class(spec, config_for_env(
      learner_step.ENVS[name], samples_per_insert=None, min_replay_size=1,
      batch_size=batch_size))
  server, client = learner_step._replay(agent, environment, spec)  # pylint: disable=protected-access
  built = {}
  build_s = _cpu_s(lambda: built.update(learner=agent.make_learner(
      client, counting.Counter(), loggers.NoOpLogger(),
      compile_mode='xla').learner))
  learner = built['learner']
  stand_in = tf.nest.map_structure(lambda s: tf.ones(s.shape, s.dtype),
                                   learner._samples.element_spec)  # pylint: disable=protected-access
  trace_s = _cpu_s(lambda: learner._update.get_concrete_function(stand_in))  # pylint: disable=protected-access
  compile_s = _cpu_s(lambda: learner._update(stand_in))  # pylint: disable=protected-access
  step_s = _cpu_s(lambda: learner._update(stand_in))  # pylint: disable=protected-access
  server.stop()
  return dict(agent=name, build=build_s, trace=trace_s, compile=compile_s,
              step=step_s)


def main(argv):
  del argv
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  print(f'| agent | batch | build CPU s | trace CPU s | XLA compile CPU s | '
        'one step CPU s |')
  print('|---|---|---|---|---|---|')
  for name in learner_step._AGENTS.value:  # pylint: disable=protected-access
    row = measure(name, _BATCH.value)
    print(f'| {name} | {_BATCH.value} | {row["build"]:.2f} | '
          f'{row["trace"]:.2f} | {row["compile"]:.2f} | {row["step"]:.4f} |',
          flush=True)


if __name__ == '__main__':
  app.run(main)

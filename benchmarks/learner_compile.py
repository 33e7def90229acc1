r"""XLA against a plain TF graph for the on-policy learner's gradient steps,
on pixels and on flat vectors: the figures behind --learner_compile=auto.

Times Adam steps on the PPO agent's own actor-critic network (the Nature
CNN torso for ale:, the MLP for gym:) over minibatches of
--minibatch_size observations, under a loss that stands in for PPO's (the
cost is the network's forward and backward pass): one step per call, and a
loop of --loop_steps steps in one call, as PPO's update runs its epochs of
minibatches. Prints a markdown table: ms per gradient step in each mode and
xla / graph.

  python -m benchmarks.learner_compile
  python -m benchmarks.learner_compile --envs=ale:Breakout --loop_steps=16
"""
import time

import numpy as np
import sonnet as snt
import tensorflow as tf
from absl import flags
from acme import specs

import agents
from launch import cli
from launch.nodes import threads
from quarl import envs

_ENVS = flags.DEFINE_list('envs', ['ale:Breakout', 'gym:CartPole-v1'],
                          'Environments (their observations set the net).')
_MINIBATCH = flags.DEFINE_integer('minibatch_size', 256,
                                  'Observations per gradient step.')
_LOOP_STEPS = flags.DEFINE_integer('loop_steps', 4,
                                   'Gradient steps in the looped call.')
_SECONDS = flags.DEFINE_float('seconds', 5.0,
                              'Timed seconds per cell (at least 2 calls).')
cli.require_positive('minibatch_size', 'loop_steps', 'seconds')


def _network_and_frames(env_name: str):
  environment = envs.make_environment(env_name, 0)
  spec = specs.make_environment_spec(environment)
  kind = envs.observation_kind(environment)
  environment.close()
  agent_class, config_for_env = agents.lookup('ppo')
  agent = agent_class(spec, config_for_env(env_name))
  observation = spec.observations
  rng = np.random.default_rng(0)
  frames = rng.integers(0, 255, (_MINIBATCH.value * _LOOP_STEPS.value,)
                        + observation.shape).astype(observation.dtype)
  return agent.network(), tf.constant(frames), kind


def _gradient_step(network, optimizer, observations):
  with tf.GradientTape() as tape:
    logits, values = network(observations)
    loss = tf.reduce_mean(tf.square(logits)) + tf.reduce_mean(
        tf.square(values))
  variables = network.trainable_variables
  optimizer.apply(tape.gradient(loss, variables), variables)
  return loss


def _ms_per_step(call, frames, steps_per_call: int) -> float:
  call(frames)  # Traces and compiles.
  calls, start = 0, time.perf_counter()
  while calls < 2 or time.perf_counter() - start < _SECONDS.value:
    call(frames)
    calls += 1
  return 1e3 * (time.perf_counter() - start) / (calls * steps_per_call)


def measure(env_name: str):
  """{(form, mode): ms per gradient step} on `env_name`'s observations."""
  network, frames, kind = _network_and_frames(env_name)
  size, loop_steps = _MINIBATCH.value, _LOOP_STEPS.value
  cells = {}
  for mode in ('graph', 'xla'):
    optimizer = snt.optimizers.Adam(1e-4)

    def one(frames):
      return _gradient_step(network, optimizer, frames[:size])

    def looped(frames):
      def body(index, loss):
        del loss
        part = tf.slice(frames, [index * size] + [0] * (frames.shape.rank - 1),
                        [size] + frames.shape[1:].as_list())
        return index + 1, _gradient_step(network, optimizer, part)
      return tf.while_loop(lambda index, _: index < loop_steps, body,
                           (tf.constant(0), tf.constant(0.0)))[1]

    for form, fn, steps in (('one step per call', one, 1),
                            (f'{loop_steps} steps in a loop', looped,
                             loop_steps)):
      compiled = tf.function(fn, jit_compile=mode == 'xla')
      cells[form, mode] = _ms_per_step(compiled, frames, steps)
      print(f'  {env_name} {form} {mode}: {cells[form, mode]:.1f} ms/step',
            flush=True)
  return kind, cells


def main(argv):
  del argv
  for env_name in _ENVS.value:
    try:
      envs.validate_environment_name(env_name)
    except ValueError as error:
      cli.usage_exit('learner_compile', str(error))
  # The learner's threads on this machine, as a run's thread plan gives.
  plan = threads.plan(threads.machine_cores(), num_actors=2)
  tf.config.threading.set_intra_op_parallelism_threads(plan.learner_threads)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  lines = ['| env | observations | gradient steps | graph ms/step | '
           'xla ms/step | xla / graph |', '|---|---|---|---|---|---|']
  for env_name in _ENVS.value:
    kind, cells = measure(env_name)
    for form in dict.fromkeys(form for form, _ in cells):
      graph, xla = cells[form, 'graph'], cells[form, 'xla']
      lines.append(f'| {env_name} | {kind} | {form} | {graph:.1f} | '
                   f'{xla:.1f} | {xla / graph:.2f}x |')
  print(f'\nMinibatches of {_MINIBATCH.value}, PPO\'s network, '
        f'{plan.learner_threads} learner thread(s):\n')
  print('\n'.join(lines))


if __name__ == '__main__':
  cli.run_main(main, 'learner_compile')

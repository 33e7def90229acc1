"""The learner node's saves, on a real D4PG learner with real Reverb and
Courier servers in this process: the last save of a stopping run returns
within seconds when the counter is already gone (no unbounded RPC), and
weights that stopped being finite are never saved over a good checkpoint."""
import dataclasses
import os
import threading
import time

import numpy as np
import pytest
import reverb
from absl import flags
from acme import specs
from courier.python import client as courier_client
from launchpad.launch import worker_manager
from launchpad.nodes.courier import courier_utils

from launch import cli
from launch.runtime import stop
from launch.nodes import common
from launch.nodes import counter as counter_node
from launch.nodes import learner as learner_node
from quarl import envs


def _learner_and_peers(run_dir, agent, env, **overrides):
  """(learner node, counter server, config, stop the servers) with 300
  transitions queued."""
  config = cli.make_run_config(
      agent=agent, env=env, actor_precision='int8',
      num_actors=1, run_dir=str(run_dir), seed=0,
      # The tests step the learner themselves; the budget is a backstop that
      # a slow machine's set-up cannot spend.
      max_seconds=3600, max_actor_steps=1_000_000, publish_period='5s', eval_episodes=1,
      launch_type='local_mt', learner_compile='graph',
      agent_overrides=dict(min_replay_size=100, batch_size=16, **overrides))
  flags.FLAGS.mark_as_parsed()  # Launchpad's flags, at their defaults.
  worker_manager.WorkerManager(register_in_thread=True)  # lp.stop_event().
  stop.reset_in_process()
  built = common.make_agent(config)
  replay_server = reverb.Server(built.replay_tables())
  replay = reverb.Client(f'localhost:{replay_server.port}')
  counter_server = courier_utils.make_courier_server(
      counter_node.CounterNode(config), port=0)
  counter_server.Start()
  counter = courier_client.Client(f'localhost:{counter_server.port}')
  _fill(built, replay, config, transitions=300)
  node = learner_node.LearnerNode(replay, counter, config)

  def stop_servers():
    counter_server.Stop()
    replay_server.stop()
  return node, counter_server, config, stop_servers


@pytest.fixture
def learner_and_peers(tmp_path):
  """(learner node, counter server, config): D4PG on Pendulum."""
  node, counter_server, config, stop_servers = _learner_and_peers(
      tmp_path, 'd4pg', 'gym:Pendulum-v1', policy_layers=(32, 32),
      critic_layers=(32, 32))
  yield node, counter_server, config
  stop_servers()


def _fill(agent, replay, config, transitions):
  environment = envs.make_environment(config.env, config.seed)
  adder = agent.make_adder(replay)
  spec = specs.make_environment_spec(environment)
  rng = np.random.default_rng(0)
  timestep = environment.reset()
  adder.add_first(timestep)
  for _ in range(transitions):
    action = envs.random_action(spec.actions, rng)
    timestep = environment.step(action)
    adder.add(action, timestep)
    if timestep.last():
      timestep = environment.reset()
      adder.add_first(timestep)


def _checkpoints(config):
  directory = os.path.join(config.run_dir, 'checkpoints', 'learner')
  return sorted(name for name in os.listdir(directory)
                if name.endswith('.index'))


def test_last_save_with_the_counter_gone_returns_within_seconds(
    learner_and_peers):
  node, counter_server, config = learner_and_peers
  for _ in range(3):
    node._learner.step()  # pylint: disable=protected-access
  counter_server.Stop()  # As under a threaded stop: the counter went first.
  start = time.time()
  node._save_for_resume()  # pylint: disable=protected-access
  elapsed = time.time() - start
  assert elapsed < 3 * stop.STOP_RPC_TIMEOUT_S, elapsed
  assert _checkpoints(config)  # The learner's own save still happened.


def test_non_finite_weights_fail_the_run_and_keep_the_last_checkpoint(
    learner_and_peers):
  node, _, config = learner_and_peers
  node._learner.step()  # pylint: disable=protected-access
  node._save_state()  # pylint: disable=protected-access
  saved = _checkpoints(config)
  weight = node._networks[0].trainable_variables[0]  # pylint: disable=protected-access
  weight.assign(np.full(weight.shape, np.nan, np.float32))
  with pytest.raises(learner_node.NonFiniteLearnerError):
    node._save_state()  # pylint: disable=protected-access
  node._save_for_resume()  # pylint: disable=protected-access
  assert _checkpoints(config) == saved
  assert stop.reason(config.run_dir).startswith('failed: learner weight')


def test_resume_restores_the_whole_learner_or_fails(learner_and_peers,
                                                    tmp_path):
  node, _, config = learner_and_peers
  node._learner.step()  # pylint: disable=protected-access
  node._save_state()  # pylint: disable=protected-access
  replay = node._replay  # pylint: disable=protected-access
  counter = node._counter  # pylint: disable=protected-access
  resumed = learner_node.LearnerNode(
      replay, counter, dataclasses.replace(config, resume=True))
  for mine, theirs in zip(node._networks, resumed._networks):  # pylint: disable=protected-access
    for a, b in zip(mine.trainable_variables, theirs.trainable_variables):
      np.testing.assert_array_equal(a.numpy(), b.numpy())
  # A layer the checkpoint does not have: a partial restore, refused.
  deeper = dataclasses.replace(
      config, resume=True, agent_config=dataclasses.replace(
          config.agent_config, policy_layers=(32, 32, 32)))
  with pytest.raises(AssertionError, match='not bound to checkpointed values'):
    learner_node.LearnerNode(replay, counter, deeper)


def test_periodic_saves_leave_the_replay_table_to_a_thread(learner_and_peers):
  """The learner steps on while the replay server writes its table; the
  stop's save waits for that write, then writes the table again."""
  node, _, config = learner_and_peers
  replay = node._replay  # pylint: disable=protected-access
  release = threading.Event()
  written = []

  class HeldReplay:
    """The real replay client, its checkpoint held until released."""

    def checkpoint(self):
      release.wait(30)
      written.append(replay.checkpoint())
      return written[-1]

  node._replay = HeldReplay()  # pylint: disable=protected-access
  node._learner.step()  # pylint: disable=protected-access
  node._periodic_save()  # pylint: disable=protected-access
  assert _checkpoints(config)  # The learner's own save is done ...
  saver = node._replay_saver  # pylint: disable=protected-access
  assert saver.is_alive() and not written  # ... the table's in flight.
  release.set()
  node._save_for_resume()  # pylint: disable=protected-access
  assert not saver.is_alive() and len(written) == 2


def test_weights_stay_finite_while_compile_ahead_runs_its_stand_in(
    tmp_path):
  """compile_ahead runs the update once on a stand-in batch, then puts every
  weight back; a quantizer may read them in between (it does not wait for
  the compile). A batch of zeros gave DQN's prioritized sample zero
  probabilities, infinite importance weights and NaN weights, and the
  quantizer refused its first publish."""
  node, _, _, stop_servers = _learner_and_peers(tmp_path, 'dqn',
                                                'gym:CartPole-v1')
  learner = node._learner  # pylint: disable=protected-access
  before = learner.get_variables(['policy'])[0]
  update, mid_compile = learner._update, []  # pylint: disable=protected-access

  class UpdateThenRead:
    """The real update, and a read of the weights before they are put back."""
    get_concrete_function = update.get_concrete_function

    def __call__(self, sample):
      fetches = update(sample)
      mid_compile.append(node.get_variables(['policy'])[0])
      return fetches

  learner._update = UpdateThenRead()  # pylint: disable=protected-access
  try:
    assert learner.compile_ahead()
  finally:
    stop_servers()
  assert all(np.isfinite(w).all() for w in mid_compile[0])
  for got, want in zip(learner.get_variables(['policy'])[0], before):
    np.testing.assert_array_equal(got, want)

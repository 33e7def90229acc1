"""An environment's NaN is refused at the door: the run stops as failed
naming the env, the node and the step, and nothing non-finite reaches the
replay, the calibration set or GST's clock."""
import math
import threading

import numpy as np
import pytest
import reverb
from acme.wrappers import base as wrapper_base

from launch import cli
from launch.config import RunConfig
from launch.nodes import common
from launch.nodes import finite_data
from launch.nodes import learner as learner_node
from launch.runtime import stop
from quarl import compression
from quarl import envs
from quarl.quantization import calibration

ENV = 'gym:CartPole-v1'
NAN_AT_STEP = 7


class _NanObservationsFrom(wrapper_base.EnvironmentWrapper):
  """A real CartPole whose observations turn NaN from a given step on (a
  simulator that diverged)."""

  def __init__(self, environment, step):
    super().__init__(environment)
    self._step, self._steps = step, 0

  def step(self, action):
    self._steps += 1
    timestep = self._environment.step(action)
    if self._steps >= self._step:
      timestep = timestep._replace(
          observation=np.full_like(timestep.observation, np.nan))
    return timestep


def test_a_nan_observation_fails_the_run_and_never_reaches_the_replay(
    tmp_path):
  config = RunConfig(agent='dqn', env=ENV, run_dir=str(tmp_path),
                     agent_config=cli.make_agent_config('dqn', ENV, {}))
  environment = finite_data.FiniteOnly(
      _NanObservationsFrom(envs.make_environment(ENV, 0), NAN_AT_STEP), ENV,
      'actor_1', str(tmp_path))
  agent = common.make_agent(config, environment)
  # The agent's tables as queues: every item read back once, unthrottled.
  server = reverb.Server([
      reverb.Table.queue(table.name, 10_000, signature=table.info.signature)
      for table in agent.replay_tables()])
  client = reverb.Client(f'localhost:{server.port}')
  try:
    adder = agent.make_adder(client)
    adder.add_first(environment.reset())
    with pytest.raises(finite_data.NonFiniteDataError):
      for _ in range(100):
        action = np.int64(0)
        timestep = environment.step(action)
        adder.add(action, timestep)
        if timestep.last():
          adder.add_first(environment.reset())
    adder.reset()  # Flushes what was written.
    assert stop.reason(str(tmp_path)) == (
        f'failed: env {ENV} returned a non-finite observation to actor_1 at '
        f'step {NAN_AT_STEP}')
    read = 0
    for table, info in client.server_info().items():
      if info.current_size:
        for sample in client.sample(table, num_samples=info.current_size,
                                    emit_timesteps=False):
          assert finite_data.all_finite(sample.data), table
          read += 1
    assert read >= NAN_AT_STEP - 2  # The finite transitions did go in.
  finally:
    server.stop()


def test_a_nan_reward_is_named(tmp_path):
  class NanReward(wrapper_base.EnvironmentWrapper):
    def step(self, action):
      return self._environment.step(action)._replace(reward=np.float32('inf'))

  environment = finite_data.FiniteOnly(
      NanReward(envs.make_environment(ENV, 0)), ENV, 'evaluator',
      str(tmp_path))
  environment.reset()
  with pytest.raises(finite_data.NonFiniteDataError,
                     match='non-finite reward to evaluator at step 1'):
    environment.step(np.int64(0))


def test_integer_and_nested_observations():
  assert finite_data.all_finite(np.zeros([84, 84, 4], np.uint8))
  assert finite_data.all_finite({'a': np.ones(3), 'b': 1.0})
  assert not finite_data.all_finite({'a': np.ones(3), 'b': [0.0, math.inf]})


def test_non_finite_replay_observations_are_never_calibrated_on():
  rng = np.random.default_rng(0)
  replayed = rng.normal(size=(400, 4)).astype(np.float32)
  replayed[::3, 1] = np.nan
  rollout = rng.normal(size=(calibration.ROLLOUT_SAMPLES, 4)).astype(
      np.float32)
  calibration_set, held, source = calibration.split(replayed, rollout)
  assert source == 'replay'
  assert np.all(np.isfinite(calibration_set)) and np.all(np.isfinite(held))
  all_nan = np.full((400, 4), np.nan, np.float32)
  assert calibration.split(all_nan, rollout)[2] == 'rollout'


def test_a_nan_return_neither_moves_nor_resets_the_gst_clock():
  """Today's clock takes a NaN average as 'holding' and resets its count of
  evaluations below the best: the learner refuses it first."""
  node = object.__new__(learner_node.LearnerNode)  # Its courier method only.
  node._controller = compression.make_controller(  # pylint: disable=protected-access
      'gst', [], s_final=0.9, begin_step=0, end_step=100, reward_window=1,
      patience=5)
  node._controller_lock = threading.Lock()  # pylint: disable=protected-access
  clock = node._controller.clock  # pylint: disable=protected-access
  node.observe_return(100.0)
  node.observe_return(0.0)  # Far below the best: paused.
  assert clock.paused
  node.observe_return(float('nan'))
  assert clock.paused and clock.best == 100.0
  assert not math.isnan(clock.moving_average())

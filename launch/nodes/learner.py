"""Learner node: steps the agent's learner, checkpoints under run_dir."""
import os
import time

import tensorflow as tf
from absl import logging
from acme.utils import counting

from launch import loggers as run_loggers
from launch.config import RunConfig
from launch.nodes import common


class LearnerNode:
  """Serves get_variables to the quantizer/actors; never waits on them."""

  def __init__(self, replay, counter, config: RunConfig):
    self._config = config
    common.guarded('learner', config,
                   lambda: self._build(replay, counter, config))

  def _build(self, replay, counter, config: RunConfig) -> None:
    agent = common.make_agent(config)
    tf.random.set_seed(config.seed)
    self._bundle = agent.make_learner(
        replay, counting.Counter(counter, 'learner'),
        run_loggers.make_logger(config.run_dir, 'learner'))
    self._learner = self._bundle.learner
    self._checkpoint = tf.train.Checkpoint(**self._bundle.checkpointables)
    self._manager = tf.train.CheckpointManager(
        self._checkpoint, os.path.join(config.run_dir, 'checkpoints',
                                       'learner'), max_to_keep=2)
    if config.resume and self._manager.latest_checkpoint:
      self._checkpoint.restore(self._manager.latest_checkpoint)
      logging.info('restored %s', self._manager.latest_checkpoint)

  def get_variables(self, names):
    return self._learner.get_variables(names)

  def save(self) -> str:
    return self._manager.save()

  def run(self) -> None:
    common.guarded('learner', self._config, self._run)

  def _run(self) -> None:
    common.exit_after_stop(self._config, before_exit=self.save)
    last_save = time.time()
    while not common.stop_requested():
      self._learner.step()
      if time.time() - last_save > self._config.checkpoint_period_s:
        self.save()
        last_save = time.time()
    self.save()  # Stopping is the moment a resumable state matters most.

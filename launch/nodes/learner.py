"""Learner node: steps the agent's learner, compresses, checkpoints.

After every learner step the compression controller (GST, iterative pruning
or none) re-imposes its structure on the learner's hidden layers; the
evaluator feeds it returns for GST's reward-aware schedule.
"""
import os
import threading
import time

import tensorflow as tf
from absl import logging
from acme.utils import counting

from launch import loggers as run_loggers
from launch import run_dir as run_dir_lib
from launch.config import RunConfig
from launch.nodes import common
from quarl import compression


def make_controller(bundle, config: RunConfig):
  """The run's compression controller over the learner's online layers."""
  layers = bundle.compressible_layers
  return compression.make_controller(
      config.compression.kind, layers,
      dense_params=compression.dense_param_count(bundle.networks, layers),
      **config.compression.controller_knobs())


class LearnerNode:
  """Serves get_variables to the quantizer/actors; never waits on them."""

  def __init__(self, replay, counter, config: RunConfig):
    self._config = config
    common.guarded('learner', config,
                   lambda: self._build(replay, counter, config))

  def _build(self, replay, counter, config: RunConfig) -> None:
    agent = common.make_agent(config)
    tf.random.set_seed(config.seed)
    bundle = agent.make_learner(
        replay, counting.Counter(counter, 'learner'),
        run_loggers.make_logger(config.run_dir, 'learner'))
    self._learner = bundle.learner
    self._controller = make_controller(bundle, config)
    # Courier threads (observe_return) and the step loop share the controller.
    self._controller_lock = threading.Lock()
    self._checkpoint = tf.train.Checkpoint(compression=self._controller,
                                           **bundle.checkpointables)
    self._manager = tf.train.CheckpointManager(
        self._checkpoint, os.path.join(config.run_dir, 'checkpoints',
                                       'learner'), max_to_keep=2)
    if config.resume and self._manager.latest_checkpoint:
      self._checkpoint.restore(self._manager.latest_checkpoint)
      logging.info('restored %s', self._manager.latest_checkpoint)
    self._compression_csv = None

  def get_variables(self, names):
    return self._learner.get_variables(names)

  def observe_return(self, value: float) -> None:
    """Evaluation return, for GST's reward-aware sparsity clock."""
    with self._controller_lock:
      self._controller.observe_return(float(value))

  def _constrain(self, learner_step: int) -> None:
    with self._controller_lock:
      self._controller.after_optimizer_step(learner_step)

  def save(self) -> str:
    return self._manager.save()

  def _log_compression(self) -> None:
    report = self._controller.report()
    if self._compression_csv is None:
      self._compression_csv = run_dir_lib.CsvAppender(
          common.run_path(self._config, run_dir_lib.COMPRESSION_CSV),
          ('wall_time_s',) + tuple(report))
    self._compression_csv.append(
        dict(wall_time_s=common.wall_time_s(self._config), **report))

  def run(self) -> None:
    common.guarded('learner', self._config, self._run)

  def _run(self) -> None:
    common.exit_after_stop(self._config, before_exit=self.save)
    log_every = self._config.compression.log_every
    step = int(self._controller.learner_step.numpy())
    self._constrain(step)  # Circulant (GST) from step 0.
    self._log_compression()
    # Learners with an after_update hook (TD3) constrain inside step(),
    # before their target networks average the weights; others after it.
    constrains_itself = hasattr(self._learner, 'after_update')
    if constrains_itself:
      self._learner.after_update = self._constrain  # Its own step count.
    last_save = time.time()
    while not common.stop_requested():
      self._learner.step()
      step += 1
      if not constrains_itself:
        self._constrain(step)
      if step % log_every == 0:
        self._log_compression()
      if time.time() - last_save > self._config.checkpoint_period_s:
        self.save()
        last_save = time.time()
    self.save()  # Stopping is the moment a resumable state matters most.

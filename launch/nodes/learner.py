"""Learner node: steps the agent's learner, compresses, checkpoints.

The compression controller (GST, iterative pruning or none) re-imposes its
structure inside every compiled learner step and does its host bookkeeping
(clock, hand-over, masks, CR) every `update_every` steps; the evaluator
feeds it returns for GST's reward-aware schedule.
"""
import os
import threading
import time

import tensorflow as tf
from absl import logging
from acme.utils import counting

from launch import loggers as run_loggers
from launch import run_dir as run_dir_lib
from launch import stop
from launch.config import RunConfig
from launch.nodes import common
from launch.nodes import threads
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
    thread_plan = threads.plan_for(config)
    bundle = agent.make_learner(
        replay, counting.Counter(counter, 'learner'),
        run_loggers.make_logger(config.run_dir, 'learner'),
        compile_mode=config.learner_compile,
        dataset_parallel_calls=thread_plan.dataset_parallel_calls)
    self._learner = bundle.learner
    self._replay = replay
    # The stop watcher and the step loop both save: one at a time.
    self._save_lock = threading.Lock()
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
    self._saved_for_resume = False

  def get_variables(self, names):
    return self._learner.get_variables(names)

  def observe_return(self, value: float) -> None:
    """Evaluation return, for GST's reward-aware sparsity clock."""
    with self._controller_lock:
      self._controller.observe_return(float(value))

  def _sync(self, learner_step: int) -> None:
    with self._controller_lock:
      self._controller.sync(learner_step)

  def save(self) -> str:
    with self._save_lock:
      return self._manager.save()

  def _save_for_resume(self) -> None:
    """At the stop: counts flushed, learner saved, and the replay table
    checkpointed by Reverb itself (the replay node restores it at start)."""
    with self._save_lock:
      if self._saved_for_resume:
        return
      self._saved_for_resume = True
      self._learner.flush_counts()
      self._manager.save()
      try:
        logging.info('replay checkpoint: %s', self._replay.checkpoint())
      except Exception as error:  # pylint: disable=broad-except
        logging.warning('replay checkpoint failed: %s', error)

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
    common.exit_after_stop(self._config, before_exit=self._save_for_resume)
    log_every = self._config.compression.log_every
    step = int(self._controller.learner_step.numpy())
    self._controller.constrain()  # Circulant (GST) from step 0.
    self._sync(step)
    self._log_compression()
    # Traced into the compiled step at its first call.
    self._learner.constrain = self._controller.constrain
    sync_every = self._controller.update_every
    last_save = time.time()
    while not stop.requested():
      self._learner.step()
      step += 1
      if step % sync_every == 0:
        self._sync(step)
      if step % log_every == 0:
        self._log_compression()
      if time.time() - last_save > self._config.checkpoint_period_s:
        self.save()
        last_save = time.time()
    self._save_for_resume()  # When a resumable state matters most.

"""Learner node: steps the agent's learner, compresses, checkpoints.

The compression controller (GST, iterative pruning or none) re-imposes its
structure inside every compiled learner step and does its host bookkeeping
(clock, hand-over, masks, CR) every `update_every` steps; the evaluator
feeds it returns for GST's reward-aware schedule.

The run's resumable state (learner checkpoint, replay table, counts) is
saved together, soon after the first steps and then periodically, so a run
whose launcher was killed resumes from a recent save. Weights that are no
longer finite are never saved: the run stops as failed, keeping the last
finite checkpoint.
"""
import glob
import math
import os
import threading
import time

import tensorflow as tf
from absl import logging
from acme.utils import counting

from launch.runtime import loggers as run_loggers
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import saved_state
from launch.runtime import stop
from launch.config import RunConfig
from launch.nodes import common
from launch.nodes import threads
from quarl import compression

# The first save comes this soon after stepping starts; later ones every
# save_period_s(config).
FIRST_SAVE_S = 10.0
MIN_SAVE_PERIOD_S, MAX_SAVE_PERIOD_S = 20.0, 300.0
# Writing the replay table may take the server this long before the save is
# given up (and recorded as missed).
REPLAY_SAVE_TIMEOUT_S = stop.STOP_RPC_TIMEOUT_S * 3


def save_period_s(config: RunConfig) -> float:
  """About ten saves per budget, within [20 s, 5 min]."""
  return min(MAX_SAVE_PERIOD_S, max(MIN_SAVE_PERIOD_S,
                                    config.max_seconds / 10))


class NonFiniteLearnerError(RuntimeError):
  """The learner's weights are NaN/Inf: nothing worth saving or serving."""


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
                   lambda: self._build(replay, counter, config),
                   phase='build')

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
    self._counter = counter
    # The stop watcher and the step loop both save: one at a time.
    self._save_lock = threading.Lock()
    self._controller = make_controller(bundle, config)
    # Courier threads (observe_return) and the step loop share the controller.
    self._controller_lock = threading.Lock()
    self._checkpoint = tf.train.Checkpoint(compression=self._controller,
                                           **bundle.checkpointables)
    self._networks = bundle.networks
    self._manager = tf.train.CheckpointManager(
        self._checkpoint, os.path.join(config.run_dir,
                                       run_dir_lib.LEARNER_DIR), max_to_keep=2)
    if config.resume and self._manager.latest_checkpoint:
      # Every network, optimizer and compression variable that exists now
      # must come from the checkpoint: a partial restore is a failed run.
      self._checkpoint.restore(
          self._manager.latest_checkpoint).assert_existing_objects_matched()
      logging.info('restored %s', self._manager.latest_checkpoint)
    self._record_lock = threading.Lock()  # SAVES_JSON: one writer.
    self._compression_csv = None
    self._saved_for_resume = False
    self._replay_saver = None

  def get_variables(self, names):
    return self._learner.get_variables(names)

  def observe_return(self, value: float) -> None:
    """Evaluation return, for GST's reward-aware sparsity clock; a
    non-finite one is refused, so it can neither move the clock nor reset
    its pause count (the evaluator's env is checked at the door too)."""
    if not math.isfinite(value):
      logging.error('evaluation return %r refused by the sparsity clock',
                    value)
      return
    with self._controller_lock:
      self._controller.observe_return(float(value))

  def _sync(self, learner_step: int) -> None:
    with self._controller_lock:
      self._controller.sync(learner_step)

  def _check_finite(self) -> None:
    for network in self._networks:
      for variable in network.trainable_variables:
        if not bool(tf.reduce_all(tf.math.is_finite(variable))):
          raise NonFiniteLearnerError(
              f'learner weight {variable.name} is not finite at step '
              f'{int(self._controller.learner_step.numpy())}; the last '
              'finite checkpoint is kept')

  def _save_learner(self) -> str:
    """Counts flushed and the learner saved (weights that are no longer
    finite are not); the checkpoint's name, e.g. ckpt-3."""
    self._check_finite()
    stop.bounded(self._learner.flush_counts, 'learner: last counts')
    path = self._manager.save()
    for name in glob.glob(path + '.*') + [os.path.join(
        os.path.dirname(path), 'checkpoint')]:
      run_dir_lib.fsync_file(name)  # TF renames, but does not fsync.
    run_dir_lib.fsync_directory(os.path.dirname(path))
    return os.path.basename(path)

  def _save_replay_and_counts(self, checkpoint: str) -> None:
    """The replay table checkpointed by Reverb itself (the replay node
    restores it at start) and the counter's counts written; every RPC
    bounded, so a peer already gone is logged rather than waited on. What
    went with `checkpoint` is recorded (checkpoints/saves.json), so a
    resume that falls back to it finds its counts, and a replay checkpoint
    that missed its bound is on record (summary.json, the progress line)
    instead of dropped in silence."""
    replay_paths = []
    replay_saved = stop.bounded(
        lambda: replay_paths.append(self._replay.checkpoint()),
        'learner: replay checkpoint', timeout_s=REPLAY_SAVE_TIMEOUT_S)
    if replay_saved:
      logging.info('replay checkpoint: %s', replay_paths[0])
    else:
      logging.error('replay checkpoint with %s missed its %.0f s bound: a '
                    'resume from it restores an older replay', checkpoint,
                    REPLAY_SAVE_TIMEOUT_S)
    counts = []
    # A counter that did not answer the save is gone: not asked again.
    if stop.bounded(self._counter.save, 'learner: counter save') and (
        stop.bounded(lambda: counts.append(self._counter.get_counts()),
                     'learner: counts of the save')):
      with self._record_lock:
        saved_state.record_save(
            self._config.run_dir, checkpoint, counts[0],
            replay_paths[0] if replay_saved else None, replay_saved,
            keep=[os.path.basename(path)
                  for path in self._manager.checkpoints])

  def _save_state(self) -> None:
    self._save_replay_and_counts(self._save_learner())

  def _periodic_save(self) -> None:
    """The learner's state now; the replay table and the counts on a
    thread of their own, since writing the table takes the server seconds
    that would otherwise block the steps. A resume then finds a table and
    counts a little ahead of the learner."""
    with self._save_lock:
      checkpoint = self._save_learner()
    if self._replay_saver is None or not self._replay_saver.is_alive():
      self._replay_saver = threading.Thread(
          target=self._save_replay_and_counts, args=(checkpoint,),
          name='replay-saver', daemon=True)
      self._replay_saver.start()

  def _save_for_resume(self) -> None:
    """At the stop: the resumable state, once (also from the stop watcher,
    so never raising there)."""
    with self._save_lock:
      if self._saved_for_resume:
        return
      self._saved_for_resume = True
      if self._replay_saver is not None:
        self._replay_saver.join(stop.STOP_RPC_TIMEOUT_S * 4)
      try:
        self._save_state()
      except NonFiniteLearnerError as error:
        logging.error('not saved: %s', error)
        stop.request(self._config.run_dir, f'failed: {error}')

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
    # Traced into the compiled step, here while the replay fills.
    self._learner.constrain = self._controller.constrain
    if self._controller.needs_gradients:
      self._learner.record_gradients = self._controller.record_gradients
    if self._learner.compile_ahead():
      common.mark(self._config, 'learner', 'compiled')
    sync_every = self._controller.update_every
    period_s = save_period_s(self._config)
    next_save = None
    first_step = step + 1
    while not stop.requested():
      self._learner.step()
      step += 1
      if step == first_step:
        common.mark(self._config, 'learner', 'first_step')
      if step % sync_every == 0:
        self._sync(step)
      if step % log_every == 0:
        self._log_compression()
      now = time.time()
      next_save = next_save or now + FIRST_SAVE_S
      if now >= next_save:
        self._periodic_save()
        next_save = time.time() + period_s
    self._save_for_resume()  # When a resumable state matters most.

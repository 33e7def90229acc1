"""Quantizer node: learner's fp32 policy -> TFLite model, every publish cycle.

The learner never waits on it: it pulls variables over courier on its own
clock. Actors and the evaluator poll `get_model(known_version)`.
"""
import functools
import math
import os
import threading
import time
from typing import Optional, Tuple

import numpy as np
import reverb
from absl import logging

from agents import interface
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import saved_state
from launch.runtime import stop
from launch.config import RunConfig
from launch.nodes import common
from launch.nodes import finite_data
from quarl import envs
from quarl import litert
from quarl import quantization
from quarl.quantization import calibration

# Versions are epoch * VERSIONS_PER_EPOCH + n: a restarted (or resumed)
# quantizer starts a new epoch, so actors that saw its predecessor's models
# take its first one as newer.
VERSIONS_PER_EPOCH = saved_state.VERSIONS_PER_EPOCH
HEARTBEAT_PERIOD_S = 1.0
# A refused publish is retried after this, doubling up to one publish
# period (MAX_BACKOFF_S for a period in learner steps).
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0


def next_epoch(run_dir: str) -> int:
  """0 for a run's first quantizer, then one more per (re)start (a damaged
  epoch file is recovered from quantizer.csv, not a crash)."""
  return saved_state.next_quantizer_epoch(run_dir)


class Heartbeat:
  """Re-stamps run_dir/checkpoints/quantizer_alive at each publish and each
  second it waits for one: the launcher's Beacon for a quantizer that hangs
  (in conversion, on the learner) or whose publishes keep being refused."""

  def __init__(self, run_dir: str):
    self._path = os.path.join(run_dir, run_dir_lib.HEARTBEAT_FILE)
    os.makedirs(os.path.dirname(self._path), exist_ok=True)
    self._last = -math.inf

  def beat(self, unless_within_s: float = 0.0) -> None:
    if time.monotonic() - self._last >= unless_within_s:
      self._last = time.monotonic()
      run_dir_lib.write_bytes_atomic(self._path, f'{time.time()}\n'.encode(),
                                     durable=False)


class QuantizerNode:
  """Publishes (version, model bytes); version increases by one per publish."""

  def __init__(self, learner, replay: reverb.Client, counter,
               config: RunConfig):
    self._learner = learner
    self._replay = replay
    self._counter = counter
    self._config = config
    self._lock = threading.Lock()
    # (version, model bytes, learner step of its weights).
    self._latest: Optional[Tuple[int, bytes, int]] = None
    self._csv = run_dir_lib.CsvAppender(
        common.run_path(config, run_dir_lib.QUANTIZER_CSV),
        run_dir_lib.QUANTIZER_FIELDS)
    # Every model is first loaded and run here, in a child process: LiteRT
    # aborts on some models, and a refusal must not take this node down.
    self._probe = litert.ModelProbe()

  def get_model(self, known_version: int
                ) -> Optional[Tuple[int, bytes, int]]:
    """(version, bytes, learner step it was made at) of the newest model if
    newer than `known_version`, else None."""
    with self._lock:
      latest = self._latest
    if latest is None or latest[0] <= known_version:
      return None
    return latest

  @functools.cached_property
  def _agent(self):
    return common.make_agent(self._config)

  def _calibration(self, fallback: np.ndarray):
    """(calibration, held) observations and which source they came from."""
    return calibration.split(
        self._agent.calibration_observations(self._replay,
                                             calibration.REPLAY_DRAW),
        fallback)

  def _learner_steps(self) -> int:
    return int(self._counter.get_counts().get('learner_steps', 0))

  def _publish_due(self, last_time: float, last_steps: int) -> bool:
    period = self._config.publish_period
    if period.unit == 'seconds':
      return time.time() - last_time >= period.value
    return self._learner_steps() - last_steps >= period.value

  def _max_backoff_s(self) -> float:
    period = self._config.publish_period
    if period.unit == 'seconds':
      return max(FIRST_BACKOFF_S, period.value)
    return MAX_BACKOFF_S

  def run(self) -> None:
    common.guarded('quantizer', self._config, self._run)

  def _run(self) -> None:
    config = self._config
    common.exit_after_stop(config)
    heartbeat = Heartbeat(config.run_dir)
    heartbeat.beat()  # Up (a stale beat may be a predecessor's).
    agent = self._agent
    policy = agent.export_policy()
    # Converts once, then writes each publish's weights into that model.
    publisher = quantization.PolicyPublisher(
        policy, agent.observation_size, config.actor_precision,
        sparse=config.publish_sparse, postprocess=agent.model_postprocess,
        output_scale=agent.model_output_scale(), probe=self._probe)
    rng = np.random.default_rng(common.node_seed(config, 7))
    fallback = calibration.rollout_observations(
        finite_data.FiniteOnly(
            envs.make_environment(config.env, common.node_seed(config, 8)),
            config.env, 'quantizer', config.run_dir),
        calibration.ROLLOUT_SAMPLES, rng)
    self._publish_loop(
        lambda version, steps: self._publish(publisher, policy, version,
                                             steps, fallback),
        next_epoch(config.run_dir) * VERSIONS_PER_EPOCH, heartbeat)

  def _publish_loop(self, publish, first_version: int,
                    heartbeat: Heartbeat) -> None:
    """Publishes when due until the stop; `publish(version, learner_steps)`
    says whether the model was published. Refusals back off, so a policy
    whose weights LiteRT keeps refusing cannot spin this node."""
    version, last_time, last_steps = first_version, 0.0, -1
    backoff_s = FIRST_BACKOFF_S
    while not stop.requested(0.0):
      if version > first_version and not self._publish_due(last_time,
                                                           last_steps):
        heartbeat.beat(unless_within_s=HEARTBEAT_PERIOD_S)
        stop.requested(0.2)
        continue
      last_time, last_steps = time.time(), self._learner_steps()
      if publish(version, last_steps):
        version, backoff_s = version + 1, FIRST_BACKOFF_S
        heartbeat.beat()
      elif stop.requested(backoff_s):
        return
      else:
        backoff_s = min(2 * backoff_s, self._max_backoff_s())

  def _publish(self, publisher, policy, version, learner_steps,
               fallback) -> bool:
    """`learner_steps` is the counter's; on-policy learners serve their own
    exact step with the weights, which stamps the model (actors' lag)."""
    if self._agent.on_policy:
      weights, (learner_steps,) = self._learner.get_variables(
          ['policy', interface.LEARNER_STEP])
      learner_steps = int(learner_steps)
    else:
      weights = self._learner.get_variables(['policy'])[0]
    for variable, value in zip(policy.variables, weights):
      variable.assign(value)
    calibration, held, source = self._calibration(fallback)
    row = dict(wall_time_s=common.wall_time_s(self._config),
               learner_steps=learner_steps,
               precision=self._config.actor_precision,
               calibration_source=source)
    try:
      model = publisher.publish(calibration, held)
    except (quantization.NonFiniteWeightsError,
            quantization.UnloadableModelError) as error:
      # Actors keep the last good model; the row records the refusal.
      logging.error('publish %d refused: %s', version, error)
      if isinstance(error, quantization.UnloadableModelError):
        run_dir_lib.write_bytes_atomic(
            common.run_path(self._config, run_dir_lib.REFUSED_MODEL),
            error.model_bytes)
      self._csv.append(dict(row, version=-1, status=f'refused: {error}'))
      return False
    with self._lock:
      self._latest = (version, model.model_bytes, learner_steps)
    self._csv.append(dict(
        row, version=version, status='published', convert_s=model.convert_s,
        model_bytes=len(model.model_bytes), max_abs_err=model.max_abs_err,
        mean_rel_err=model.mean_rel_err, p95_rel_err=model.p95_rel_err,
        argmax_mismatch=model.argmax_mismatch, route=model.route))
    return True

"""Actor node: explores with the quantized model (or stock TF for fp32_tf)."""
import threading
import time

import acme
import numpy as np
from acme.utils import counting
from acme.utils import loggers
from acme.wrappers import base as wrapper_base

from launch.runtime import run_dir as run_dir_lib
from launch.runtime import stop
from launch.config import RunConfig
from launch.nodes import common
from launch.nodes import finite_data
from launch.nodes import threads
from quarl import actors
from quarl import envs

STATS_PERIOD_S = 5.0


class _StopRequested(Exception):
  """Raised inside an episode so a stopping actor need not finish it."""


class _StopAware(wrapper_base.EnvironmentWrapper):
  """Checks the node's stop (launch/runtime/stop.py) before every env step."""

  def step(self, action):
    if stop.requested():
      raise _StopRequested()
    return self._environment.step(action)


def make_policy_actor(agent, config: RunConfig, model_source, adder,
                      exploration: float, rng: np.random.Generator,
                      variable_update_period: int = 1000):
  """LiteRT actor on the quantizer's models, or Acme's TF actor on the
  learner's variables (pulled every `variable_update_period` update() calls);
  returns (actor, refresher or None), or (None, None) if the stop or the
  budget's end came before the first model."""
  if not config.quantized:
    return agent.make_tf_actor(model_source, adder, exploration, rng,
                               variable_update_period), None
  refresher = actors.ModelRefresher(
      model_source.get_model,
      num_threads=threads.plan_for(config).litert_threads).start()
  while not refresher.wait_for_first_model(1.0):
    if stop.requested() or common.budget_spent(config):
      refresher.stop()
      return None, None
  behaviour = agent.behaviour(exploration, rng,
                              lambda: refresher.learner_step)
  return actors.LiteRTActor(refresher, behaviour, adder), refresher


class _ActorStats:
  """The actor's rows in actors.csv: one every few seconds and a last one
  at the stop (written once, from the loop or the stop watcher), so the CSV
  ends with the steps and policy version the actor finished on."""

  def __init__(self, config: RunConfig, actor_id: int, exploration: float,
               split: actors.TimeSplit, refresher):
    self._config = config
    self._actor_id = actor_id
    self._exploration = exploration
    self._split = split
    self._refresher = refresher
    self._csv = run_dir_lib.CsvAppender(
        common.run_path(config, run_dir_lib.ACTORS_CSV),
        run_dir_lib.ACTORS_FIELDS)
    self._start = self._last_report = time.time()
    self._lock = threading.Lock()
    self._closed = False
    self.steps = 0

  def report_every(self, period_s: float) -> None:
    if time.time() - self._last_report >= period_s:
      self._append()

  def final(self) -> None:
    with self._lock:
      if self._closed:
        return
      self._closed = True
    self._append()

  def _append(self) -> None:
    self._last_report = time.time()
    split, refresher = self._split, self._refresher
    self._csv.append(dict(
        wall_time_s=common.wall_time_s(self._config), actor_id=self._actor_id,
        exploration=self._exploration, steps=self.steps,
        steps_per_s=self.steps / max(self._last_report - self._start, 1e-9),
        mean_inference_us=split.mean_us('inference'),
        policy_version=refresher.version if refresher else -1,
        load_failures=refresher.load_failures if refresher else 0,
        env_s=split.seconds['env'], inference_s=split.seconds['inference'],
        adder_s=split.seconds['adder'],
        refresh_s=(refresher.refresh_s if refresher
                   else split.seconds['refresh'])))


class ActorNode:
  """Runs episodes until stopped; appends its time split to actors.csv."""

  def __init__(self, replay, model_source, counter, config: RunConfig,
               actor_id: int):
    self._replay = replay
    self._model_source = model_source
    self._counter = counter
    self._config = config
    self._actor_id = actor_id
    self._final_row = lambda: None

  def run(self) -> None:
    common.guarded(f'actor_{self._actor_id}', self._config, self._run)

  def _run(self) -> None:
    config, actor_id = self._config, self._actor_id
    # A node blocked in Reverb at the stop still writes its last row.
    common.exit_after_stop(config, before_exit=lambda: self._final_row())
    seed = common.node_seed(config, 100 + actor_id)
    split = actors.TimeSplit()
    # Training episodes: an Atari life lost ends one (evaluation plays on).
    environment = _StopAware(actors.TimedEnvironment(
        finite_data.FiniteOnly(
            envs.make_environment(config.env, seed, training=True),
            config.env, f'actor_{actor_id}', config.run_dir), split))
    agent = common.make_agent(config, environment)
    exploration = agent.exploration(actor_id, config.num_actors)
    actor, refresher = make_policy_actor(
        agent, config, self._model_source, agent.make_adder(self._replay),
        exploration, np.random.default_rng(seed))
    if actor is None:  # No model before the stop or the budget's end.
      # Ending now would be taken for a crash and restarted: the evaluator
      # (the budget keeper) asks for the stop.
      while not stop.requested(1.0):
        pass
      return
    # A resumed (or restarted) run has done its share of warm-up already.
    done_steps = self._counter.get_counts().get('actor_steps', 0)
    warmup_steps = max(0, agent.warmup_steps(config.num_actors) -
                       int(done_steps) // config.num_actors)
    if warmup_steps:
      actor = actors.RandomWarmupActor(
          actor, agent.environment_spec.actions, warmup_steps,
          np.random.default_rng(seed))
    loop = acme.EnvironmentLoop(
        environment, actors.TimedActor(actor, split),
        counting.Counter(self._counter, 'actor'), loggers.NoOpLogger())
    stats = _ActorStats(config, actor_id, exploration, split, refresher)
    self._final_row = stats.final  # The stop watcher's before-exit hook.
    common.mark(config, f'actor_{actor_id}', 'first_step')
    while not stop.requested():
      try:
        stats.steps += loop.run_episode()['episode_length']
      except _StopRequested:
        break
      stats.report_every(STATS_PERIOD_S)
    stats.final()
    if refresher:
      refresher.stop()

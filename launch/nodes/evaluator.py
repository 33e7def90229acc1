"""Evaluator node: greedy returns of the *same* model the actors use.

It is also the run's budget keeper: when wall time or actor steps run out it
records a final evaluation and asks Launchpad to stop every node.
"""
import time

import acme
import numpy as np
from acme.utils import loggers

from launch.runtime import run_dir as run_dir_lib
from launch.runtime import stop
from launch.config import RunConfig
from launch.nodes import actor as actor_node
from launch.nodes import common
from launch.nodes import finite_data
from quarl import envs

EVAL_PERIOD_S = 10.0
# How often a waiting evaluator reads the counter (the learner adds its steps
# there about once a second).
POLL_S = 0.25


class EvaluatorNode:

  def __init__(self, model_source, learner, counter, config: RunConfig):
    self._model_source = model_source
    self._learner = learner
    self._counter = counter
    self._config = config

  def _fp32_evaluation(self, agent, seed: int):
    """The learner's fp32 policy (stock TF actor) on its own env copy, for
    reward parity with the quantized model: (actor, loop)."""
    actor = agent.make_tf_actor(self._learner, None, 0.0,
                                np.random.default_rng(seed),
                                variable_update_period=1)
    return actor, acme.EnvironmentLoop(
        envs.make_environment(self._config.env, seed), actor,
        should_update=False, logger=loggers.NoOpLogger())

  def _fp32_return(self, actor, loop: acme.EnvironmentLoop) -> float:
    actor.update(wait=True)  # The learner's newest variables.
    return float(np.mean([loop.run_episode()['episode_return']
                          for _ in range(self._config.eval_episodes)]))

  def _wait_for_next_evaluation(self, counts) -> bool:
    """Waits until the next evaluation is due; False if a stop comes first.

    With --eval_every=N it is due when the counter's learner_steps reaches
    the next multiple of N after `counts` (the last evaluation's), so GST's
    reward-aware clock sees returns at the same learner steps on any machine;
    otherwise EVAL_PERIOD_S seconds from now. A spent budget ends the wait at
    once (the final evaluation).
    """
    every = self._config.eval_every
    if every:
      next_step = (counts.get('learner_steps', 0) // every + 1) * every
    deadline = time.time() + EVAL_PERIOD_S
    while True:
      counts = self._counter.get_counts()
      if every:
        due = counts.get('learner_steps', 0) >= next_step
      else:
        due = time.time() >= deadline
      if due or common.budget_spent(self._config, counts):
        return True
      if stop.requested(POLL_S):
        return False

  def run(self) -> None:
    common.guarded('evaluator', self._config, self._run)

  def _run(self) -> None:
    config = self._config
    common.exit_after_stop(config)
    seed = common.node_seed(config, 99)
    environment = finite_data.FiniteOnly(
        envs.make_environment(config.env, seed), config.env, 'evaluator',
        config.run_dir)
    agent = common.make_agent(config, environment)
    # The TF baseline pulls variables on every update() call, which the loop
    # below makes exactly once per evaluation (not once per env step).
    actor, refresher = actor_node.make_policy_actor(
        agent, config, self._model_source, None, 0.0,
        np.random.default_rng(seed), variable_update_period=1)
    if actor is None:  # No model before the stop or the budget's end.
      if common.budget_spent(config):
        stop.request(config.run_dir, stop.BUDGET_SPENT)
      return
    loop = acme.EnvironmentLoop(environment, actor, should_update=False,
                                logger=loggers.NoOpLogger())
    fp32 = self._fp32_evaluation(agent, seed) if (
        config.eval_fp32 and config.quantized) else None
    evaluations = run_dir_lib.CsvAppender(
        common.run_path(config, run_dir_lib.EVALUATOR_CSV),
        run_dir_lib.EVALUATOR_FIELDS)
    counter = self._counter  # The counter node: program-wide counts.
    while True:
      if refresher is None:
        actor.update(wait=True)  # TF baseline: pull the newest variables.
      else:
        refresher.refresh_once()
      returns = [loop.run_episode()['episode_return']
                 for _ in range(config.eval_episodes)]
      counts = counter.get_counts()
      mean_return = float(np.mean(returns))
      self._learner.observe_return(mean_return)
      fp32_return = self._fp32_return(*fp32) if fp32 else ''
      evaluations.append(dict(
          fp32_return=fp32_return,
          wall_time_s=common.wall_time_s(config),
          actor_steps=counts.get('actor_steps', 0),
          learner_steps=counts.get('learner_steps', 0),
          episode_return=mean_return,
          policy_version=refresher.version if refresher else -1))
      if common.budget_spent(self._config, counts):
        stop.request(config.run_dir, stop.BUDGET_SPENT)
        return
      if not self._wait_for_next_evaluation(counts):
        return

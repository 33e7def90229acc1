"""What GST's reward-aware clock is fed: evaluations at learner-step
multiples (--eval_every) and a pause band measured from the random return."""
import time

import pytest

from launch.runtime import runner
from launch import cli
from quarl.compression.config import CompressionConfig
from launch.config import RunConfig
from launch.nodes import evaluator as evaluator_lib


class _Counter:
  """The counter node, reporting the given learner steps one read at a time."""

  def __init__(self, learner_steps, actor_steps=0):
    self._learner_steps = iter(learner_steps)
    self._actor_steps = actor_steps
    self.reads = 0

  def get_counts(self):
    self.reads += 1
    return {'learner_steps': next(self._learner_steps),
            'actor_steps': self._actor_steps}


def _evaluator(counter, **config):
  config = RunConfig(agent='td3', env='gym:Pendulum-v1',
                     actor_precision='int8', num_actors=1, run_dir='unused',
                     start_time=time.time(), **config)
  return evaluator_lib.EvaluatorNode(None, None, counter, config)


@pytest.fixture(name='stops')
def _stops(monkeypatch):
  """stop.requested answers from this list (then False) without waiting."""
  answers = []
  monkeypatch.setattr(evaluator_lib.stop, 'requested',
                      lambda timeout_s: answers.pop(0) if answers else False)
  return answers


def test_waits_for_the_next_multiple_of_eval_every(stops):
  del stops
  counter = _Counter([130, 180, 199, 200])
  assert _evaluator(counter, eval_every=100)._wait_for_next_evaluation(
      {'learner_steps': 120})
  assert counter.reads == 4  # Due at 200, not before.
  # An evaluation that outlasted N steps skips to the next multiple.
  counter = _Counter([299, 300])
  assert _evaluator(counter, eval_every=100)._wait_for_next_evaluation(
      {'learner_steps': 230})
  assert counter.reads == 2


def test_wait_ends_on_budget_or_stop(stops):
  counter = _Counter([10, 10], actor_steps=500)
  node = _evaluator(counter, eval_every=100, max_actor_steps=500)
  assert node._wait_for_next_evaluation({'learner_steps': 0})  # Final eval.
  assert counter.reads == 1
  stops.append(True)
  node = _evaluator(_Counter([10, 10]), eval_every=100)
  assert not node._wait_for_next_evaluation({'learner_steps': 0})


def test_eval_every_zero_keeps_the_wall_clock_period(stops, monkeypatch):
  del stops
  monkeypatch.setattr(evaluator_lib, 'EVAL_PERIOD_S', 0.0)
  counter = _Counter([0])
  assert _evaluator(counter)._wait_for_next_evaluation({'learner_steps': 0})
  assert counter.reads == 1


def _run_config(**kwargs):
  return cli.make_run_config(
      agent='td3', env='gym:Pendulum-v1', actor_precision='int8',
      num_actors=1, run_dir='unused', seed=0, max_seconds=60.0,
      max_actor_steps=None, publish_period='5s', eval_episodes=1,
      launch_type='local_mp', agent_overrides={}, **kwargs)


def test_eval_every_validation_and_gst_reference():
  with pytest.raises(cli.UsageError, match='--eval_every=-1 must be >= 0'):
    _run_config(eval_every=-1)
  config = _run_config(eval_every=500,
                       compression=CompressionConfig(kind='gst'))
  assert config.eval_every == 500
  assert config.compression.reward_reference is None  # Resolving measures nothing.
  reference = {'random': -1234.5, 'zero_action': -1100.0}
  # The random policy's return, as summary.json's baseline_returns has it.
  assert runner.with_measurements(
      config, reference).compression.reward_reference == -1234.5
  given = _run_config(compression=CompressionConfig(kind='gst',
                                                    reward_reference=-1.0))
  assert runner.with_measurements(
      given, reference).compression.reward_reference == -1.0
  assert runner.with_measurements(
      _run_config(), reference).compression.reward_reference is None

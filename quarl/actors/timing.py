"""Where an actor's time goes: env step, inference, replay write, refresh.

Wrappers rather than instrumentation inside each actor, so the stock Acme TF
actor (the fp32_tf baseline) and the LiteRT actor are timed the same way.
"""
import collections
import time

import dm_env
from acme import core
from acme.wrappers import base as wrapper_base


class TimeSplit:
  """Accumulated seconds and call counts per activity."""

  def __init__(self):
    self.seconds = collections.defaultdict(float)
    self.calls = collections.defaultdict(int)

  def add(self, activity: str, seconds: float) -> None:
    self.seconds[activity] += seconds
    self.calls[activity] += 1

  def mean_us(self, activity: str) -> float:
    calls = self.calls[activity]
    return 1e6 * self.seconds[activity] / calls if calls else 0.0


class TimedEnvironment(wrapper_base.EnvironmentWrapper):
  """Charges reset/step time to 'env'."""

  def __init__(self, environment: dm_env.Environment, split: TimeSplit):
    super().__init__(environment)
    self._split = split

  def reset(self) -> dm_env.TimeStep:
    start = time.perf_counter()
    timestep = self._environment.reset()
    self._split.add('env', time.perf_counter() - start)
    return timestep

  def step(self, action) -> dm_env.TimeStep:
    start = time.perf_counter()
    timestep = self._environment.step(action)
    self._split.add('env', time.perf_counter() - start)
    return timestep


class TimedActor(core.Actor):
  """Charges select_action to 'inference', observe* to 'adder', update to
  'refresh' (the variable pull of the TF actor; LiteRT refreshes off-loop)."""

  def __init__(self, actor: core.Actor, split: TimeSplit):
    self._actor = actor
    self._split = split

  def _timed(self, activity, fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    self._split.add(activity, time.perf_counter() - start)
    return result

  def select_action(self, observation):
    return self._timed('inference', self._actor.select_action, observation)

  def observe_first(self, timestep):
    self._timed('adder', self._actor.observe_first, timestep)

  def observe(self, action, next_timestep):
    self._timed('adder', self._actor.observe, action, next_timestep)

  def update(self, wait: bool = False):
    self._timed('refresh', self._actor.update, wait)

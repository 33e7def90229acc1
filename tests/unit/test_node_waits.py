"""Node waits that must end: refused publishes back off (and beat no
heartbeat), and a first-model wait ends at the stop or the budget."""
import dataclasses
import time

from launch import config as config_lib
from launch.config import RunConfig
from launch.nodes import actor as actor_lib
from launch.nodes import common
from launch.nodes import quantizer as quantizer_lib
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import stop


def _config(tmp_path, **kwargs):
  return RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                   actor_precision='int8', num_actors=1,
                   run_dir=str(tmp_path), start_time=time.time(), **kwargs)


class _Counter:

  def get_counts(self):
    return {'learner_steps': 0}


def _quantizer(config):
  node = quantizer_lib.QuantizerNode.__new__(quantizer_lib.QuantizerNode)
  node._config, node._counter = config, _Counter()  # pylint: disable=protected-access
  return node


def _stop_after(monkeypatch, module, waits, count):
  """stop.requested records its timeouts, answering True from the
  `count`-th timed wait on, without waiting."""

  def requested(timeout_s=0.0):
    if timeout_s:
      waits.append(timeout_s)
    return len(waits) >= count

  monkeypatch.setattr(module.stop, 'requested', requested)


def test_refused_publishes_back_off_to_one_period(tmp_path, monkeypatch):
  config = _config(tmp_path,
                   publish_period=config_lib.PublishPeriod(3.0, 'seconds'))
  waits, attempts = [], []
  _stop_after(monkeypatch, quantizer_lib, waits, 6)
  heartbeat = quantizer_lib.Heartbeat(str(tmp_path))
  _quantizer(config)._publish_loop(  # pylint: disable=protected-access
      lambda version, steps: attempts.append(version), 0, heartbeat)
  assert waits == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
  assert attempts == [0] * 6  # Every retry is the same first version.
  # Refusals are no sign of progress: no heartbeat was written.
  assert not (tmp_path / run_dir_lib.HEARTBEAT_FILE).exists()


def test_steps_period_backoff_caps_and_publish_resets_it(tmp_path,
                                                         monkeypatch):
  config = _config(tmp_path,
                   publish_period=config_lib.PublishPeriod(1e9, 'steps'))
  waits, answers = [], iter([False] * 6 + [True])
  _stop_after(monkeypatch, quantizer_lib, waits, 8)
  _quantizer(config)._publish_loop(  # pylint: disable=protected-access
      lambda version, steps: next(answers), 0,
      quantizer_lib.Heartbeat(str(tmp_path)))
  # Refused six times, then published: the rest waits for a due publish.
  assert waits[:6] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0]
  assert waits[6:] == [0.2, 0.2]
  assert (tmp_path / run_dir_lib.HEARTBEAT_FILE).exists()


def test_heartbeat_is_a_beacon_that_beats_when_asked(tmp_path):
  path = str(tmp_path / run_dir_lib.HEARTBEAT_FILE)
  beacon = stop.Beacon(path, from_start=False)
  heartbeat = quantizer_lib.Heartbeat(str(tmp_path))
  assert beacon.silent_s() is None  # No beat yet.
  heartbeat.beat()
  assert 0 <= beacon.silent_s() < 1
  time.sleep(0.3)
  heartbeat.beat(unless_within_s=60)  # Too soon: not re-stamped.
  assert beacon.silent_s() >= 0.3
  heartbeat.beat()
  assert beacon.silent_s() < 0.3


def test_budget_spent_by_wall_time_or_actor_steps(tmp_path):
  config = _config(tmp_path, max_seconds=60, max_actor_steps=100)
  assert not common.budget_spent(config)
  assert not common.budget_spent(config, {'actor_steps': 99})
  assert common.budget_spent(config, {'actor_steps': 100})
  late = dataclasses.replace(_config(tmp_path, max_seconds=60),
                             start_time=time.time() - 61)
  assert common.budget_spent(late)


class _NeverLoads:
  """A model refresher whose first model never comes."""
  stopped = False

  def __init__(self, fetch, num_threads):
    del fetch, num_threads

  def start(self):
    return self

  def wait_for_first_model(self, timeout_s):
    del timeout_s
    return False

  def stop(self):
    _NeverLoads.stopped = True


class _Agent:
  """make_policy_actor needs nothing of it before the first model."""


class _Source:
  get_model = None


def test_first_model_wait_ends_when_the_budget_is_spent(tmp_path,
                                                        monkeypatch):
  monkeypatch.setattr(actor_lib.actors, 'ModelRefresher', _NeverLoads)
  monkeypatch.setattr(actor_lib.stop, 'requested', lambda timeout_s=0: False)
  config = dataclasses.replace(_config(tmp_path, max_seconds=60),
                               start_time=time.time() - 61)
  assert actor_lib.make_policy_actor(
      _Agent(), config, _Source(), None, 0.0, None) == (None, None)
  assert _NeverLoads.stopped

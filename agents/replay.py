"""The Reverb tables, adders and datasets agents share.

Every agent's program has two tables: the learner's (REPLAY_TABLE: a
uniform or prioritised transition replay, or an on-policy queue) and a small
FIFO mirror of recent data that the quantizer calibrates int8 models from,
so calibration never samples from (and rate-limits) the learner's table.
"""
import dataclasses
from typing import Any, Dict, List, Optional

import reverb
import tensorflow as tf
from acme import adders
from acme import specs
from acme.adders import reverb as reverb_adders

from agents import packed_transitions
from quarl.settings import setting

# The learner's table (Acme's default name, which its DQN learner writes
# priority updates to).
REPLAY_TABLE = reverb_adders.DEFAULT_PRIORITY_TABLE
CALIBRATION_TABLE = 'calibration'
CALIBRATION_TABLE_SIZE = 2048
# Learner dataset workers (Acme's default of 12 oversubscribes small
# machines; launch/nodes/threads.py sizes it).
DATASET_PARALLEL_CALLS = 2


@dataclasses.dataclass
class ReplayRegime:
  """How the learner's table meters actors, a field of every replay agent's
  config.

  With `max_times_sampled` 0 (Acme's regime), `samples_per_insert` holds
  actors to a replay ratio (Reverb's SampleToInsertRatio). A positive
  `max_times_sampled` is the regime ActorQ's authors ran (harvard-edge/QuaRL:
  MinSize, uniform sampling, FIFO eviction, each item sampled at most this
  many times, 16 in their scripts): actors are never throttled, and the
  learner needs at least batch_size / max_times_sampled fresh transitions a
  step, so faster actors mean fresher data.
  """
  max_times_sampled: int = setting(
      0, "ActorQ's replay regime: actors never throttled, each transition "
      'sampled at most N times (the authors ran 16); replaces '
      'samples_per_insert. 0: the replay ratio')


def regime(config) -> Dict[str, Any]:
  """summary.json's account of the learner table's limiter."""
  spi = getattr(config, 'samples_per_insert', None)
  if getattr(config, 'max_times_sampled', 0):
    name = 'max_times_sampled'
  else:
    name = 'min_size' if spi is None else 'samples_per_insert'
  return dict(regime=name, samples_per_insert=spi,
              max_times_sampled=getattr(config, 'max_times_sampled', 0),
              min_replay_size=config.min_replay_size)


def calibration_table(signature,
                      max_size: int = CALIBRATION_TABLE_SIZE) -> reverb.Table:
  return reverb.Table(
      name=CALIBRATION_TABLE,
      sampler=reverb.selectors.Uniform(),
      remover=reverb.selectors.Fifo(),
      max_size=max_size,
      rate_limiter=reverb.rate_limiters.MinSize(1),
      signature=signature)


def rate_limiter(min_replay_size: int, samples_per_insert: Optional[float]
                 ) -> reverb.rate_limiters.RateLimiter:
  """The learner table's limiter: learn after `min_replay_size` inserts and,
  unless `samples_per_insert` is None, hold actors to that replay ratio (with
  Acme's 10% tolerance) so they cannot starve the learner of CPU."""
  if samples_per_insert is None:
    return reverb.rate_limiters.MinSize(min_replay_size)
  return reverb.rate_limiters.SampleToInsertRatio(
      min_size_to_sample=min_replay_size,
      samples_per_insert=samples_per_insert,
      error_buffer=0.1 * min_replay_size * samples_per_insert)


def transition_tables(environment_spec: specs.EnvironmentSpec, config,
                      sampler) -> List[reverb.Table]:
  """Packed N-step transition replay (agents/packed_transitions.py) drawn
  by `sampler` (FIFO eviction at config.max_replay_size, config's rate limit
  and max_times_sampled), and its calibration mirror."""
  signature = packed_transitions.Layout(environment_spec).signature()
  replay = reverb.Table(
      name=REPLAY_TABLE,
      sampler=sampler,
      remover=reverb.selectors.Fifo(),
      max_size=config.max_replay_size,
      rate_limiter=rate_limiter(config.min_replay_size,
                                config.samples_per_insert),
      max_times_sampled=config.max_times_sampled,
      signature=signature)
  return [replay, calibration_table(signature)]


def transition_adder(replay_client: reverb.Client,
                     environment_spec: specs.EnvironmentSpec, n_step: int,
                     discount: float) -> adders.Adder:
  """Packed N-step transitions into the learner's table and the calibration
  table."""
  return packed_transitions.NStepAdder(
      replay_client, packed_transitions.Layout(environment_spec), n_step,
      discount, tables=(REPLAY_TABLE, CALIBRATION_TABLE))


def transition_dataset(replay_client: reverb.Client,
                       environment_spec: specs.EnvironmentSpec,
                       batch_size: int,
                       parallel_calls: int = DATASET_PARALLEL_CALLS
                       ) -> tf.data.Dataset:
  """Batches of N-step transitions (reverb.ReplaySample) for the learner."""
  return packed_transitions.dataset(
      replay_client.server_address, REPLAY_TABLE,
      packed_transitions.Layout(environment_spec), batch_size,
      parallel_calls)

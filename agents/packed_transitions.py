"""N-step transitions stored as one float32 vector per replay item.

A Reverb sample costs its client one chunk decompression per column, so an
N-step transition spread over five columns (Acme's NStepTransitionAdder,
whose chunks also span several steps) made drawing a batch of 256 cost the
learner more CPU than its update. Packed into one column with one step per
chunk, a sample needs one decompression, and the learner unpacks whole
batches with a few tensor ops. The adder writes exactly the transitions
Acme's NStepTransitionAdder writes (the shorter ones at an episode's start
and end included), and the dataset yields the same reverb.ReplaySample of
acme.types.Transition, so learners do not change.
"""
import collections
import itertools
from typing import Dict, List, NamedTuple, Sequence, Tuple

import dm_env
import numpy as np
from absl import logging
import reverb
import tensorflow as tf
from acme import adders
from acme import specs
from acme import types

COLUMN = 'transition'
CLOSE_FLUSH_TIMEOUT_MS = 10_000


class _Field(NamedTuple):
  name: str
  shape: Tuple[int, ...]
  dtype: np.dtype

  @property
  def size(self) -> int:
    return int(np.prod(self.shape, dtype=np.int64))


class Layout:
  """Where each field of a transition sits in the packed vector.

  Vector agents' fields (flat float32 observations, float32 or small int32
  actions, float32 reward and discount) all survive a float32 round trip.
  """

  def __init__(self, environment_spec: specs.EnvironmentSpec):
    observation = environment_spec.observations
    self.fields = [
        _Field('observation', tuple(observation.shape), observation.dtype),
        _Field('action', tuple(environment_spec.actions.shape),
               environment_spec.actions.dtype),
        _Field('reward', tuple(environment_spec.rewards.shape),
               environment_spec.rewards.dtype),
        _Field('discount', tuple(environment_spec.discounts.shape),
               environment_spec.discounts.dtype),
        _Field('next_observation', tuple(observation.shape),
               observation.dtype)]
    self.size = sum(field.size for field in self.fields)

  def signature(self) -> Dict[str, tf.TensorSpec]:
    return {COLUMN: tf.TensorSpec([self.size], tf.float32)}

  def pack(self, *values) -> np.ndarray:
    """One vector from the fields' values, in `fields` order."""
    return np.concatenate([np.asarray(value, np.float32).reshape(-1)
                           for value in values])

  def observations(self, packed: np.ndarray) -> np.ndarray:
    """The first observation of each packed row."""
    return np.asarray(packed, np.float32)[..., :self.fields[0].size]

  def unpack(self, packed: tf.Tensor) -> types.Transition:
    """A [batch, size] tensor as a batch of acme.types.Transition."""
    parts = tf.split(packed, [field.size for field in self.fields], axis=-1)
    batch = tf.shape(packed)[:-1]
    values = {
        field.name: tf.cast(tf.reshape(part, tf.concat(
            [batch, tf.constant(field.shape, tf.int32)], 0)), field.dtype)
        for field, part in zip(self.fields, parts)}
    return types.Transition(extras=(), **values)


class NStepAdder(adders.Adder):
  """Acme's N-step transitions, packed, into `tables` at priority 1.

  For N = 3 an episode s0..s4 gives (s0 -> s1), (s0 -> s2), (s0 -> s3),
  (s1 -> s4), then at its end (s2 -> s4), (s3 -> s4): reward the discounted
  sum over the span, discount the product of the environment's discounts
  and N - 1 agent discounts (the learner applies the last one).
  """

  def __init__(self, client: reverb.Client, layout: Layout, n_step: int,
               discount: float, tables: Sequence[str],
               max_in_flight_items: int = 5):
    if n_step < 1:
      raise ValueError(f'n_step must be at least 1, not {n_step}')
    self._client = client
    self._layout = layout
    self._n_step = n_step
    self._discount = np.float32(discount)
    self._tables = list(tables)
    self._max_in_flight = max_in_flight_items
    self._writer = None
    self._observations: List[np.ndarray] = []
    self._steps: collections.deque = collections.deque()

  def _write(self, first: int, last: int) -> None:
    """The transition from window position `first` to `last`."""
    steps = list(itertools.islice(self._steps, first, last))
    reward = np.copy(np.asarray(steps[0][1], np.float32))
    total_discount = np.copy(np.asarray(steps[0][2], np.float32))
    for _, step_reward, step_discount in steps[1:]:
      total_discount *= self._discount
      reward += step_reward * total_discount
      total_discount *= step_discount
    packed = self._layout.pack(self._observations[first], steps[0][0],
                               reward, total_discount,
                               self._observations[last])
    if self._writer is None:
      # One step per item, so one step per chunk: the cheapest to sample.
      self._writer = self._client.trajectory_writer(num_keep_alive_refs=1)
    self._writer.append({COLUMN: packed})
    item = {COLUMN: self._writer.history[COLUMN][-1]}
    for table in self._tables:
      self._writer.create_item(table=table, priority=1.0, trajectory=item)
      self._writer.flush(self._max_in_flight)

  def add_first(self, timestep: dm_env.TimeStep) -> None:
    if not timestep.first():
      raise ValueError('add_first needs a first timestep')
    self.reset()
    self._observations = [timestep.observation]

  def add(self, action: types.NestedArray, next_timestep: dm_env.TimeStep,
          extras: types.NestedArray = ()) -> None:
    if not self._observations:
      raise ValueError('add_first must be called before add')
    if extras:
      raise ValueError('packed transitions carry no extras')
    self._steps.append((action, next_timestep.reward,
                        next_timestep.discount))
    self._observations.append(next_timestep.observation)
    if len(self._steps) > self._n_step:
      self._steps.popleft()
      self._observations.pop(0)
    last = len(self._steps)
    self._write(0, last)
    if next_timestep.last():
      for first in range(1, last):
        self._write(first, last)
      self.reset()

  def reset(self) -> None:
    """Forgets the episode so far. No item spans two steps, so the writer
    needs no episode boundary."""
    self._observations = []
    self._steps.clear()

  def __del__(self):
    """Sends what is still in flight (bounded: the server may be gone)."""
    if self._writer is not None:
      try:
        self._writer.flush(0, timeout_ms=CLOSE_FLUSH_TIMEOUT_MS)
      except reverb.DeadlineExceededError:
        logging.warning('replay: items still in flight were dropped')
      self._writer.close()


def dataset(server_address: str, table: str, layout: Layout,
            batch_size: int, parallel_calls: int,
            prefetch_size: int = 4) -> tf.data.Dataset:
  """Batches of reverb.ReplaySample(info, Transition) from `table`."""

  def one_worker(unused_index):
    samples = reverb.TrajectoryDataset.from_table_signature(
        server_address=server_address, table=table,
        max_in_flight_samples_per_worker=2 * batch_size)
    return samples.batch(batch_size, drop_remainder=True)

  batches = tf.data.Dataset.range(parallel_calls).interleave(
      one_worker, cycle_length=parallel_calls,
      num_parallel_calls=parallel_calls, deterministic=False)
  return batches.map(
      lambda sample: reverb.ReplaySample(
          info=sample.info, data=layout.unpack(sample.data[COLUMN]))
  ).prefetch(prefetch_size)

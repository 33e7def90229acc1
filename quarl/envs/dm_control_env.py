"""dm_control suite tasks behind QuaRL's environment contract."""
from typing import List

from acme import specs
import dm_env
import numpy as np

from quarl.envs import quiet


def known_targets() -> List[str]:
  """Every suite task as 'DOMAIN:TASK', for validation and suggestions."""
  from dm_control import suite  # pylint: disable=g-import-not-at-top
  return [f'{domain}:{task}' for domain, task in suite.ALL_TASKS]


def load(target: str, seed: int, training: bool) -> dm_env.Environment:
  """Loads 'DOMAIN:TASK' with the task's randomness seeded by `seed`."""
  del training  # The same environment for training and evaluation.
  from dm_control import suite  # pylint: disable=g-import-not-at-top
  domain, task = target.split(':')
  with quiet.quiet_mujoco_compile():
    environment = suite.load(domain, task, task_kwargs={'random': seed})
  return FlatFloat32Environment(environment)


def _float32_or_none(value):
  return None if value is None else np.float32(value)


class FlatFloat32Environment(dm_env.Environment):
  """A suite task whose observation dict becomes one float32 vector.

  Agents and the TFLite export take a single flat input, and fp32 is what the
  learner trains in, so the conversion happens once, here. The vector joins
  the observation fields in the task's own (fixed) OrderedDict order.
  """

  def __init__(self, environment: dm_env.Environment):
    self._environment = environment
    observation_spec = environment.observation_spec()
    self._keys = list(observation_spec)
    size = sum(int(np.prod(observation_spec[key].shape)) for key in self._keys)
    self._observation_spec = specs.Array((size,), np.float32, 'observation')

  def _convert(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
    observation = np.concatenate(
        [np.ravel(timestep.observation[key]) for key in self._keys])
    return timestep._replace(
        observation=observation.astype(np.float32),
        reward=_float32_or_none(timestep.reward),
        discount=_float32_or_none(timestep.discount))

  def reset(self) -> dm_env.TimeStep:
    return self._convert(self._environment.reset())

  def step(self, action) -> dm_env.TimeStep:
    return self._convert(self._environment.step(action))

  def observation_spec(self) -> specs.Array:
    return self._observation_spec

  def action_spec(self) -> specs.BoundedArray:
    return self._environment.action_spec().replace(dtype=np.float32)

  def reward_spec(self) -> specs.Array:
    return self._environment.reward_spec().replace(dtype=np.float32)

  def discount_spec(self) -> specs.BoundedArray:
    return self._environment.discount_spec().replace(dtype=np.float32)

  def close(self) -> None:
    self._environment.close()

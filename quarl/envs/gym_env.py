"""gym 0.26 and gymnasium 1.x environments behind QuaRL's environment contract.

Both libraries have the same 5-tuple step API, so one adapter serves both
(Acme 0.4.0's GymWrapper expects the old 4-tuple API). gymnasium carries the
MuJoCo v5 tasks written for MuJoCo 3 (Hopper, Walker2d, ...), which gym
0.26's v4 model files no longer compile on.
"""
import functools
from typing import Callable, List, NamedTuple, Tuple

from acme import specs
import dm_env
import numpy as np

from quarl.envs import quiet
from quarl.envs.errors import EnvironmentBuildError


class Library(NamedTuple):
  """A gym-API library: its scheme name and how to import it quietly."""
  scheme: str
  import_module: Callable

  def known_targets(self) -> List[str]:
    """Every registered id, for validation and suggestions."""
    return list(self.import_module().envs.registry)

  def load(self, env_id: str, seed: int,
           training: bool) -> dm_env.Environment:
    """Makes env `env_id`; `seed` fixes the whole run's randomness."""
    del training  # The same environment for training and evaluation.
    library = self.import_module()
    name = f'{self.scheme}:{env_id}'
    try:
      with quiet.quiet_mujoco_compile():
        environment = library.make(env_id)
    except ValueError as error:  # MuJoCo's XML errors are ValueErrors.
      raise EnvironmentBuildError(
          f'{name} cannot be built with the pinned {self.scheme} and '
          f'MuJoCo: {str(error).splitlines()[0]}') from error
    except library.error.DependencyNotInstalled as error:  # box2d, say.
      raise EnvironmentBuildError(
          f'{name} needs a package this environment lacks: '
          f'{str(error).splitlines()[0]}') from error
    return GymEnvironment(environment, seed, library.spaces)


GYM = Library('gym', quiet.import_gym)
GYMNASIUM = Library('gymnasium', quiet.import_gymnasium)


def _action_spec_and_converter(space,
                               spaces) -> Tuple[specs.Array, Callable]:
  """The dm_env action spec of a gym action space and how to map back to it."""
  if isinstance(space, spaces.Discrete):
    spec = specs.DiscreteArray(int(space.n), dtype=np.int32, name='action')
    return spec, lambda action: int(action) + int(space.start)
  if isinstance(space, spaces.Box):
    spec = specs.BoundedArray(space.shape, np.float32, space.low, space.high,
                              name='action')
    return spec, lambda action: np.asarray(action, dtype=space.dtype)
  raise ValueError(f'unsupported gym action space {space}: '
                   'only Box and Discrete are')


def timestep(observation: np.ndarray, reward: float, terminated: bool,
             truncated: bool) -> dm_env.TimeStep:
  """A gym step as a dm_env step: `terminated` ends an episode with discount
  0, `truncated` (a TimeLimit) with discount 1, so TD targets still bootstrap
  from the cut-off state; when both are set the episode really ended, so
  termination wins."""
  if terminated:
    step_type, discount = dm_env.StepType.LAST, 0.0
  elif truncated:
    step_type, discount = dm_env.StepType.LAST, 1.0
  else:
    step_type, discount = dm_env.StepType.MID, 1.0
  return dm_env.TimeStep(step_type, np.float32(reward), np.float32(discount),
                         observation)


class GymLikeEnvironment(dm_env.Environment):
  """The specs every gym-API adapter shares: float32 rewards and discounts;
  subclasses set `_observation_spec` and `_action_spec`."""

  def observation_spec(self) -> specs.Array:
    return self._observation_spec

  def action_spec(self) -> specs.Array:
    return self._action_spec

  def reward_spec(self) -> specs.Array:
    return specs.Array((), np.float32, 'reward')

  def discount_spec(self) -> specs.BoundedArray:
    return specs.BoundedArray((), np.float32, 0.0, 1.0, 'discount')


class GymEnvironment(GymLikeEnvironment):
  """A gym or gymnasium env seen as a dm_env.Environment (`spaces`: its
  library's spaces module).

  Observations are flattened to one float32 vector; episode ends as
  `timestep` says.
  Only the first reset is seeded: later episodes differ from each other, yet
  the whole run repeats for the same seed.
  """

  def __init__(self, environment, seed: int, spaces):
    self._environment = environment
    self._pending_seed = seed
    self._flatten = functools.partial(spaces.flatten,
                                      environment.observation_space)
    flat_space = spaces.flatten_space(environment.observation_space)
    self._observation_spec = specs.Array(flat_space.shape, np.float32,
                                         'observation')
    self._action_spec, self._to_gym_action = _action_spec_and_converter(
        environment.action_space, spaces)
    environment.action_space.seed(seed)
    self._reset_next_step = True

  def _observation(self, observation) -> np.ndarray:
    return np.asarray(self._flatten(observation), dtype=np.float32)

  def reset(self) -> dm_env.TimeStep:
    observation, _ = self._environment.reset(seed=self._pending_seed)
    self._pending_seed = None
    self._reset_next_step = False
    return dm_env.restart(self._observation(observation))

  def step(self, action) -> dm_env.TimeStep:
    if self._reset_next_step:
      return self.reset()
    observation, reward, terminated, truncated, _ = self._environment.step(
        self._to_gym_action(action))
    self._reset_next_step = terminated or truncated
    return timestep(self._observation(observation), reward, terminated,
                    truncated)

  def close(self) -> None:
    self._environment.close()

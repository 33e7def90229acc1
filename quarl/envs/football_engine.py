"""The Football environment as the child process builds it (pipe_server.py
imports this file as `football_engine`, beside it on its path): only the
Football Python, which has the engine, ever imports it.

gfootball seeds its engine once, from `game_engine_random_seed`, and then
replays the same engine randomness every episode. Here each reset draws the
next episode's engine seed from `seed`, so episodes differ from each other
yet the whole run repeats for the same seed (as GymEnvironment's do).
"""
import gfootball.env  # pylint: disable=import-error
import numpy as np


class _ReseededFootball:
  """create_environment's env, with a fresh engine seed at every reset."""

  def __init__(self, environment, seed: int):
    self._environment = environment
    self._seeds = np.random.default_rng(seed)
    self.observation_space = environment.observation_space
    self.action_space = environment.action_space

  def reset(self):
    config = self._environment.unwrapped._config  # pylint: disable=protected-access
    seed = int(self._seeds.integers(2**31 - 1))
    config['game_engine_random_seed'] = seed
    # Which side the agent's team plays from follows the seed's parity on
    # a fresh env, but is fixed at the first reset unless set again.
    config['reverse_team_processing'] = bool(seed % 2)
    return self._environment.reset()

  def step(self, action):
    return self._environment.step(action)

  def close(self):
    self._environment.close()


def make(scenario: str, seed: int) -> _ReseededFootball:
  """`scenario` with simple115v2 observations and the scoring reward (+1 a
  goal scored, -1 conceded); no dumps, video or rendering."""
  environment = gfootball.env.create_environment(
      env_name=scenario, representation='simple115v2', rewards='scoring',
      render=False, write_goal_dumps=False, write_full_episode_dumps=False,
      write_video=False,
      other_config_options={'game_engine_random_seed': seed})
  return _ReseededFootball(environment, seed)

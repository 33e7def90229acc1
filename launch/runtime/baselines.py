"""Reference returns a trained policy must beat: random and zero actions.

On some tasks doing nothing already scores well (dm_control cartpole balance:
~745 for zero actions), so 'learned' is only meaningful against both.

Measured once per run, before it starts, and kept in run_dir/baselines.json
for its summary and every resume. The measuring is bounded: a zero-action
Breakout game never serves, so it would run to ALE's 108,000-frame cap.
"""
import functools
import json
import os
import time
from typing import Dict, Optional

import numpy as np
from acme import specs

from launch.runtime import run_dir as run_dir_lib
from quarl import envs

EPISODES = 3
# An episode ends here at the latest (ALE's 108,000 frames at frame skip 4);
# other envs end sooner, at their own time limit.
MAX_EPISODE_STEPS = 27_000
# For both policies together; an episode cut short counts what it scored.
MAX_SECONDS = 60.0


def _episode_return(environment, choose_action, deadline: float) -> float:
  timestep = environment.reset()
  total = 0.0
  for _ in range(MAX_EPISODE_STEPS):
    if timestep.last() or time.time() >= deadline:
      break
    timestep = environment.step(choose_action())
    total += float(timestep.reward or 0.0)
  return total


def _mean_return(environment, choose_action, episodes: int,
                 deadline: float) -> float:
  """At least one episode; no new one once `deadline` has passed."""
  returns = [_episode_return(environment, choose_action, deadline)]
  while len(returns) < episodes and time.time() < deadline:
    returns.append(_episode_return(environment, choose_action, deadline))
  return float(np.mean(returns))


@functools.lru_cache(maxsize=None)
def _measure(env_name: str, episodes: int, seed: int):
  print(f'measuring reference returns (random, zero-action) for {env_name} '
        f'(at most {MAX_SECONDS:.0f}s)...', flush=True)
  environment = envs.make_environment(env_name, seed)
  action_spec = specs.make_environment_spec(environment).actions
  rng = np.random.default_rng(seed)
  random_action = lambda: envs.random_action(action_spec, rng)  # pylint: disable=unnecessary-lambda-assignment
  if isinstance(action_spec, specs.DiscreteArray):
    zero_action = lambda: np.int32(0)  # pylint: disable=unnecessary-lambda-assignment
  else:
    zero_action = lambda: np.clip(  # pylint: disable=unnecessary-lambda-assignment
        np.zeros(action_spec.shape, action_spec.dtype), action_spec.minimum,
        action_spec.maximum).astype(action_spec.dtype)
  start = time.time()
  result = (('random', _mean_return(environment, random_action, episodes,
                                    start + MAX_SECONDS / 2)),
            ('zero_action', _mean_return(environment, zero_action, episodes,
                                         start + MAX_SECONDS)))
  environment.close()
  return result


def baseline_returns(env_name: str, episodes: int = EPISODES,
                     seed: int = 0) -> Dict[str, float]:
  """Mean episode return of uniformly random and of all-zero actions;
  measured once per process (make_run_config's GST reference and the
  run's own baselines are then the same episodes)."""
  return dict(_measure(env_name, episodes, seed))


def _key(env_name: str, seed: int, episodes: int) -> Dict[str, object]:
  return {'env': env_name, 'seed': seed, 'episodes': episodes}


def stored(run_dir: str, env_name: str, seed: int,
           episodes: int = EPISODES) -> Optional[Dict[str, float]]:
  """run_dir's baselines.json returns if measured for the same env, seed and
  episodes, else None."""
  path = os.path.join(os.path.expanduser(run_dir), run_dir_lib.BASELINES_JSON)
  if not os.path.exists(path):
    return None
  with open(path) as handle:
    payload = json.load(handle)
  if {k: payload.get(k) for k in ('env', 'seed', 'episodes')} != _key(
      env_name, seed, episodes):
    return None
  return payload['returns']


def for_run(run_dir: str, env_name: str, seed: int,
            episodes: int = EPISODES) -> Dict[str, float]:
  """The run's reference returns: stored ones, or measured and stored."""
  returns = stored(run_dir, env_name, seed, episodes)
  if returns is None:
    returns = baseline_returns(env_name, episodes, seed)
    run_dir_lib.write_json_atomic(
        os.path.join(run_dir, run_dir_lib.BASELINES_JSON),
        dict(_key(env_name, seed, episodes), returns=returns))
  return returns

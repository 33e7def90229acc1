"""Stable-Baselines3's PPO on an Atari game, on our env's settings.

Run by benchmarks/ppo_reference.py inside the reference's own virtualenv
(requirements/ppo_reference.txt; SB3 runs on torch, which the project's
stack does not carry), never imported by the project. It uses SB3's own
Atari wrappers, stacked to match quarl/envs/atari_env.py: frame skip 4 with
the max of the last two frames, no sticky actions, up to 30 no-ops at a
game's start, 84x84 grayscale, 4 frames stacked, 108,000 frames per game; in
training a lost life ends the episode and rewards are clipped. Unlike the
RL Zoo's AtariWrapper it does not press FIRE at reset: neither does ours.

The hyper-parameters are the RL Zoo's Atari PPO (8 envs x 128 steps,
4 epochs of minibatches of 256, Adam 2.5e-4 and clip 0.1 both annealed to 0,
entropy 0.01, value 0.5, gradient norm 0.5, GAE 0.95). Every `eval_every`
env steps, between updates, it plays `eval_episodes` full games sampling the
policy (our evaluator's protocol), appends a row to RUN_DIR/evaluator.csv and
saves the model (RUN_DIR/checkpoint.zip); summary.json follows at the end.
A run started again on its RUN_DIR resumes from that checkpoint: the weights,
Adam's state and the step count (so the annealing), with fresh games.

  python benchmarks/ppo_reference_sb3.py --run_dir=DIR --seed=0 \
      --budget=1000000
"""
import argparse
import csv
import json
import os
import time
from typing import List

import gymnasium as gym
import numpy as np
from ale_py.env import AtariEnv
from stable_baselines3 import PPO
from stable_baselines3.common import atari_wrappers
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.vec_env import VecFrameStack
import torch

MAX_EPISODE_FRAMES = 108_000
NUM_ENVS, NUM_STEPS = 8, 128
CHECKPOINT = 'checkpoint.zip'


def make_env(game: str, seed: int, training: bool):
  """One game on our env's settings (the module docstring)."""

  def build():
    env = AtariEnv(game=game, obs_type='rgb', frameskip=1,
                   repeat_action_probability=0.0, full_action_space=False,
                   max_num_frames_per_episode=MAX_EPISODE_FRAMES)
    env = gym.wrappers.RecordEpisodeStatistics(env)
    env = atari_wrappers.NoopResetEnv(env, noop_max=30)
    env = atari_wrappers.MaxAndSkipEnv(env, skip=4)
    if training:
      env = atari_wrappers.EpisodicLifeEnv(env)
    env = atari_wrappers.WarpFrame(env, width=84, height=84)
    if training:
      env = atari_wrappers.ClipRewardEnv(env)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env

  return build


def linear(start: float):
  """SB3's schedules get the fraction of the run left (1 -> 0)."""
  return lambda remaining: start * remaining


def kept_rows(path: str, steps: int) -> List[List[str]]:
  """evaluator.csv's rows up to the checkpoint's `steps` (a row written
  after the last checkpoint is played again on resume)."""
  if not os.path.exists(path):
    return []
  with open(path, newline='') as handle:
    rows = list(csv.reader(handle))[1:]
  return [row for row in rows if int(row[1]) <= steps]


class Evaluate(BaseCallback):
  """Every `every` env steps, between updates: full games sampling the
  policy as a row of evaluator.csv, then the checkpoint."""

  def __init__(self, env, every: int, episodes: int, run_dir: str,
               steps: int):
    super().__init__()
    self._env, self._every, self._episodes = env, every, episodes
    self._path = os.path.join(run_dir, 'evaluator.csv')
    self._checkpoint = os.path.join(run_dir, CHECKPOINT)
    self._next = (steps // every + 1) * every
    rows = kept_rows(self._path, steps)
    # Wall time goes on from the last row kept.
    self._start = time.monotonic() - (float(rows[-1][0]) if rows else 0.0)
    with open(self._path, 'w', newline='') as handle:
      csv.writer(handle).writerows(
          [['wall_time_s', 'actor_steps', 'episode_return'], *rows])

  def wall_s(self) -> float:
    return round(time.monotonic() - self._start, 1)

  def _on_step(self) -> bool:
    return True

  def _on_rollout_start(self) -> None:
    """After the previous rollout's update, so the row and the checkpoint
    hold the same weights."""
    if self.num_timesteps >= self._next:
      self._next += self._every
      returns = [self._play() for _ in range(self._episodes)]
      with open(self._path, 'a', newline='') as handle:
        csv.writer(handle).writerow([self.wall_s(), self.num_timesteps,
                                     float(np.mean(returns))])
      self.model.save(self._checkpoint + '.tmp.zip')
      os.replace(self._checkpoint + '.tmp.zip', self._checkpoint)

  def _play(self) -> float:
    observation = self._env.reset()
    total, done = 0.0, False
    while not done:
      action, _ = self.model.predict(observation, deterministic=False)
      observation, _, dones, infos = self._env.step(action)
      done = bool(dones[0])
      if done:
        total = float(infos[0]['episode']['r'])
    return total


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--run_dir', required=True)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--budget', type=int, default=1_000_000,
                      help='Env steps (agent steps, 4 frames each).')
  parser.add_argument('--game', default='breakout', help="ALE ROM id.")
  parser.add_argument('--eval_every', type=int, default=51_200)
  parser.add_argument('--eval_episodes', type=int, default=3)
  args = parser.parse_args()
  os.makedirs(args.run_dir, exist_ok=True)
  # One thread: on a loaded 2-core machine torch's two OpenMP threads wait
  # on each other (an inference took 39 ms against 2.2 ms on one).
  torch.set_num_threads(1)
  torch.manual_seed(args.seed)
  train_env = VecFrameStack(DummyVecEnv(
      [make_env(args.game, args.seed * 100 + i, True)
       for i in range(NUM_ENVS)]), n_stack=4)
  eval_env = VecFrameStack(DummyVecEnv(
      [make_env(args.game, args.seed * 100 + 99, False)]), n_stack=4)
  schedules = dict(learning_rate=linear(2.5e-4), clip_range=linear(0.1))
  checkpoint = os.path.join(args.run_dir, CHECKPOINT)
  resumed = os.path.exists(checkpoint)
  if resumed:
    model = PPO.load(checkpoint, env=train_env, device='cpu',
                     custom_objects=schedules)
  else:
    model = PPO('CnnPolicy', train_env, n_steps=NUM_STEPS, n_epochs=4,
                batch_size=256, ent_coef=0.01, vf_coef=0.5,
                max_grad_norm=0.5, gae_lambda=0.95, gamma=0.99,
                seed=args.seed, device='cpu', verbose=0, **schedules)
  steps = model.num_timesteps
  print(f'[sb3] {"resuming at" if resumed else "starting from"} {steps} env '
        'steps', flush=True)
  evaluate = Evaluate(eval_env, args.eval_every, args.eval_episodes,
                      args.run_dir, steps)
  # Without the reset SB3 counts on from `steps` to the same total, so the
  # schedules anneal over the whole budget.
  model.learn(total_timesteps=args.budget - steps, callback=evaluate,
              reset_num_timesteps=not resumed)
  with open(os.path.join(args.run_dir, 'summary.json'), 'w') as handle:
    json.dump({'status': 'completed', 'implementation': 'stable-baselines3',
               'seed': args.seed, 'game': args.game,
               'actor_steps': int(model.num_timesteps),
               'wall_s': evaluate.wall_s(), 'resumed': resumed,
               'torch_threads': torch.get_num_threads()}, handle, indent=1)


if __name__ == '__main__':
  main()

"""A2C hyper-parameters: one plain dataclass, filled from flags at the edge."""
import dataclasses
from typing import Sequence

from quarl.settings import setting


@dataclasses.dataclass
class A2CConfig:
  """The A2C paper's Atari losses (entropy 0.01, value 0.5, gradient norm
  0.5) and learning rate (7e-4) with Adam (eps 1e-5, as PPO's Atari runs
  use), sized for a 2-core machine: a batch is `batch_size` trajectories of
  `unroll_length` steps (baselines: 16 envs x 5 steps). Adam rather than
  the paper's RMSProp: on Breakout here RMSProp either never moved the
  policy or diverged on stale data (docs/results.md, "Why Adam").
  """
  unroll_length: int = setting(16, 'Env steps per trajectory')
  batch_size: int = setting(4, 'Trajectories per learner batch')
  discount: float = setting(0.99, 'Discount per env step')
  learning_rate: float = setting(7e-4, 'Adam learning rate')
  adam_epsilon: float = setting(1e-5, 'Adam epsilon')
  entropy_cost: float = setting(0.01, 'Entropy bonus weight')
  value_cost: float = setting(0.5, 'Value loss weight')
  max_gradient_norm: float = setting(0.5, 'Global gradient norm clip')
  num_epochs: int = setting(
      1, 'Gradient steps per batch (A2C uses each trajectory once)')
  queue_size: int = setting(
      16, 'Trajectories queued for the learner before actors block')
  mlp_layers: Sequence[int] = setting(
      (256, 256, 256), 'Hidden layers of the MLP torso for flat-vector '
      'observations (frames get the Nature CNN)')
  calibration_size: int = setting(
      128, 'Recent trajectories kept for int8 calibration (T+1 frames each)')


# `paper` is baselines' A2C batch: 80 steps per update (here 16 x 5).
PRESETS = {
    'small': {},
    'paper': dict(unroll_length=5, batch_size=16, queue_size=64),
}


def config_for_env(env_name: str, preset: str = 'small',
                   **overrides) -> A2CConfig:
  """A2CConfig: preset, then explicit overrides (flags) win. One setting
  serves every Atari game: the learner clips rewards to [-1, 1]."""
  del env_name
  return A2CConfig(**{**PRESETS[preset], **overrides})

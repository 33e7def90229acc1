"""PPO hyper-parameters: A2C's fields plus the clip, other defaults."""
import dataclasses

from agents.a2c.config import A2CConfig
from quarl.settings import setting


@dataclasses.dataclass
class PPOConfig(A2CConfig):
  """Schulman et al. 2017's Atari PPO as CleanRL runs it (Adam 2.5e-4,
  clip 0.1, GAE lambda 0.95, 4 epochs over each batch), with batches of
  `batch_size` trajectories of `unroll_length` steps sized for 2 cores."""
  batch_size: int = setting(8, 'Trajectories per learner batch')
  learning_rate: float = setting(2.5e-4, 'Adam learning rate')
  gae_lambda: float = setting(0.95, 'GAE lambda')
  num_epochs: int = setting(4, 'Passes over each batch')
  clip_epsilon: float = setting(0.1, 'Clip of the probability ratio')


# `paper` is the PPO paper's batch: 8 actors x 128 steps per update.
PRESETS = {
    'small': {},
    'paper': dict(unroll_length=128, batch_size=8, queue_size=16,
                  calibration_size=8),
}


def config_for_env(env_name: str, preset: str = 'small',
                   **overrides) -> PPOConfig:
  """PPOConfig: preset, then explicit overrides (flags) win."""
  del env_name
  return PPOConfig(**{**PRESETS[preset], **overrides})

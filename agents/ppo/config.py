"""PPO hyper-parameters: A2C's fields plus the clip, other defaults."""
import dataclasses

from agents.a2c.config import A2CConfig


@dataclasses.dataclass
class PPOConfig(A2CConfig):
  """Schulman et al. 2017's Atari PPO as CleanRL runs it (Adam 2.5e-4,
  clip 0.1, GAE lambda 0.95, 4 epochs over each batch), with batches of
  `batch_size` trajectories of `unroll_length` steps sized for 2 cores."""
  batch_size: int = 8
  learning_rate: float = 2.5e-4
  gae_lambda: float = 0.95
  num_epochs: int = 4
  clip_epsilon: float = 0.1


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

"""TD3 hyper-parameters: the paper's values, one CPU-sized exception."""
import dataclasses
from typing import Sequence

from agents import replay


@dataclasses.dataclass
class TD3Config(replay.ReplayRegime):
  """Fujimoto et al. 2018 (TD3), except the batch (see PRESETS['paper']).

  batch_size 64 instead of the paper's 256: samples_per_insert equals the
  batch, the paper's replay ratio of one gradient step per environment step,
  so the learner's step rate caps the actors' environment steps. On the 2-core
  CPU machine (HalfCheetah sizes) a step took ~2.6 ms at 64 and ~7 ms at 256:
  ~2.7x more environment steps per second, with the cores left to actors.
  """
  policy_layers: Sequence[int] = (256, 256)
  critic_layers: Sequence[int] = (256, 256)
  batch_size: int = 64
  n_step: int = 1
  discount: float = 0.99
  policy_learning_rate: float = 3e-4
  critic_learning_rate: float = 3e-4
  # Polyak rate of the target networks, updated with the policy.
  tau: float = 0.005
  # Policy and target updates every this many critic updates.
  policy_update_period: int = 2
  # Target policy smoothing, in units of the action half-range.
  target_noise: float = 0.2
  target_noise_clip: float = 0.5
  # The paper waits 10k steps (uniform actions) before learning.
  min_replay_size: int = 10_000
  # Uniform-random env steps across all actors before the policy acts.
  random_warmup_steps: int = 10_000
  max_replay_size: int = 1_000_000
  # Learner samples per inserted transition (None: no rate limit).
  samples_per_insert: float = 64.0
  # Actor i's Gaussian sigma, log-spaced in [min, max] and in units of the
  # action half-range; one actor gets sqrt(min * max) = 0.1, the paper's.
  sigma_min: float = 0.05
  sigma_max: float = 0.2


# `small` (the defaults) is sized for a 2-core machine; `paper` restores the
# paper's batch at the same replay ratio (one update per environment step).
PRESETS = {
    'small': {},
    'paper': dict(batch_size=256, samples_per_insert=256.0),
}


def config_for_env(env_name: str, preset: str = 'small',
                   **overrides) -> TD3Config:
  """TD3Config: preset, then explicit overrides (flags) win.

  The paper uses one setting for every MuJoCo task, so `env_name` changes
  nothing (target noise already scales with each task's action range).
  """
  del env_name
  return TD3Config(**{**PRESETS[preset], **overrides})

"""TD3 hyper-parameters: the paper's values, one CPU-sized exception."""
import dataclasses
from typing import Sequence


@dataclasses.dataclass
class TD3Config:
  """Fujimoto et al. 2018 (TD3), except batch_size and min_replay_size.

  batch_size 64 instead of the paper's 256: on a 2-core CPU one TD3 step
  (three 256x256 networks forward and back, two target networks forward) is
  about linear in the batch, and a 64 batch keeps the learner fast enough for
  the actors' data. samples_per_insert equals batch_size, which is the
  paper's replay ratio: one gradient step per environment step.
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
  max_replay_size: int = 1_000_000
  # Learner samples per inserted transition (None: no rate limit).
  samples_per_insert: float = 64.0
  # Actor i's Gaussian sigma (action units), log-spaced in [min, max]; one
  # actor gets sqrt(min * max) = 0.1, the paper's value on [-1, 1] actions.
  sigma_min: float = 0.05
  sigma_max: float = 0.2


def config_for_env(env_name: str, **overrides) -> TD3Config:
  """TD3Config with `overrides`; TD3's defaults serve every task."""
  del env_name  # The paper uses one setting for all MuJoCo tasks.
  return TD3Config(**overrides)

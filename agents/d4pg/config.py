"""D4PG hyper-parameters: one plain dataclass, filled from flags at the edge."""
import dataclasses
from typing import Sequence

from agents import replay


@dataclasses.dataclass
class D4PGConfig(replay.ReplayRegime):
  policy_layers: Sequence[int] = (256, 256, 256)
  critic_layers: Sequence[int] = (256, 256)
  # Acme's D4PG torsos start Linear -> LayerNorm -> tanh; ours too. Int8
  # keeps the policy faithful (benchmarks/squash_fidelity.py
  # --policy_layer_norm); LiteRT runs it ~2x slower than without at 3x256
  # (benchmarks/actor_inference.py), still far below an env step.
  critic_layer_norm: bool = True
  policy_layer_norm: bool = True
  batch_size: int = 64  # Small: learner-bound on 2 cores; see presets.
  n_step: int = 5
  discount: float = 0.99
  policy_learning_rate: float = 3e-4
  critic_learning_rate: float = 1e-3
  target_update_period: int = 100
  min_replay_size: int = 1000
  max_replay_size: int = 1_000_000
  # Learner samples per inserted transition (None: no rate limit).
  samples_per_insert: float = 32.0
  # Distributional critic support; returns outside [vmin, vmax] are clipped.
  vmin: float = -150.0
  vmax: float = 150.0
  num_atoms: int = 51
  # Actor i's Gaussian sigma, log-spaced in [sigma_min, sigma_max], in units
  # of the action half-range (as TD3's).
  sigma_min: float = 0.05
  sigma_max: float = 0.5


# Critic support per task, where returns fall far outside Acme's [-150, 150]
# (dm_control rewards lie in [0, 1], so its tasks keep the default).
VALUE_RANGES = {
    'gym:Pendulum-v1': (-1500.0, 0.0),
    'gym:MountainCarContinuous-v0': (-100.0, 100.0),
    'gym:HalfCheetah-v4': (-500.0, 1500.0),
    'gym:Humanoid-v4': (-100.0, 1000.0),
}


# `small` (the defaults) is sized for a 2-core machine; `paper` is ActorQ's
# D4PG setup: a 3x2048 policy and Acme's D4PG learner settings.
PRESETS = {
    'small': {},
    'paper': dict(policy_layers=(2048, 2048, 2048),
                  critic_layers=(512, 512, 256), batch_size=256,
                  policy_learning_rate=1e-4, critic_learning_rate=1e-4,
                  n_step=5, samples_per_insert=32.0, sigma_max=0.3),
}


def config_for_env(env_name: str, preset: str = 'small',
                   **overrides) -> D4PGConfig:
  """D4PGConfig for a task: preset, then the task's critic support, then
  explicit overrides (flags) win."""
  vmin, vmax = VALUE_RANGES.get(env_name, (D4PGConfig.vmin, D4PGConfig.vmax))
  return D4PGConfig(**{'vmin': vmin, 'vmax': vmax, **PRESETS[preset],
                       **overrides})

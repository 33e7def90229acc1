"""D4PG hyper-parameters: one plain dataclass, filled from flags at the edge."""
import dataclasses
from typing import Optional, Sequence

from agents import replay
from quarl.settings import setting


@dataclasses.dataclass
class D4PGConfig(replay.ReplayRegime):
  """Acme's D4PG, sized for a small machine (batch 64: learner-bound on 2
  cores; PRESETS['paper'] has ActorQ's). Acme's torsos start Linear ->
  LayerNorm -> tanh; int8 keeps that policy faithful
  (benchmarks/squash_fidelity.py) and LiteRT runs it ~2x slower than without
  at 3x256 (benchmarks/actor_inference.py), still far below an env step."""
  policy_layers: Sequence[int] = setting((256, 256, 256),
                                         'Policy MLP hidden widths')
  critic_layers: Sequence[int] = setting((256, 256),
                                         'Critic MLP hidden widths')
  critic_layer_norm: bool = setting(
      True, 'LayerNorm + tanh after the critic torso\'s input layer')
  policy_layer_norm: bool = setting(
      True, 'LayerNorm + tanh after the policy torso\'s input layer; off '
      'makes int8 actors ~2x faster at 3x256')
  batch_size: int = setting(64, 'Learner batch size')
  n_step: int = setting(5, 'N-step return length')
  discount: float = setting(0.99, 'Discount per env step')
  policy_learning_rate: float = setting(3e-4, 'Policy Adam learning rate')
  critic_learning_rate: float = setting(1e-3, 'Critic Adam learning rate')
  target_update_period: int = setting(
      100, 'Learner steps between target network copies')
  min_replay_size: int = setting(1000, 'Transitions before learning starts')
  max_replay_size: int = setting(1_000_000, 'Replay capacity (FIFO)')
  samples_per_insert: Optional[float] = setting(
      32.0, 'Replay ratio: learner samples per inserted transition')
  vmin: float = setting(
      -150.0, 'Distributional critic support minimum (per-task ranges in '
      'VALUE_RANGES)')
  vmax: float = setting(150.0, 'Distributional critic support maximum')
  num_atoms: int = setting(51, 'Atoms of the critic\'s support')
  sigma_min: float = setting(
      0.05, 'Actor i\'s Gaussian sigma is log-spaced in [sigma_min, '
      'sigma_max], in units of the action half-range')
  sigma_max: float = setting(0.5, 'See sigma_min')


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

"""DQN hyper-parameters: one plain dataclass, filled from flags at the edge."""
import dataclasses
from typing import Optional, Sequence

from agents import replay


@dataclasses.dataclass
class DQNConfig(replay.ReplayRegime):
  """Defaults (`small`) let gym CartPole-v1 learn in ~1-2 minutes on 2 cores."""
  q_layers: Sequence[int] = (256, 256)
  batch_size: int = 64
  n_step: int = 3
  discount: float = 0.99
  learning_rate: float = 1e-3
  target_update_period: int = 100
  min_replay_size: int = 1000
  max_replay_size: int = 100_000
  # Learner samples per inserted transition (None: no rate limit).
  samples_per_insert: Optional[float] = 8.0
  # Prioritised replay: sampling ~ priority ** exponent; the learner corrects
  # the bias with importance weights raised to the second exponent.
  priority_exponent: float = 0.6
  importance_sampling_exponent: float = 0.2
  # Actor i's epsilon is Ape-X's base ** (1 + alpha * i / (N - 1)).
  epsilon_base: float = 0.4
  epsilon_alpha: float = 7.0


# `paper` follows the reference ActorQ DQN runs: a 3x2048 Q-network, batch
# 256, 5-step returns, a 200k replay.
PRESETS = {
    'small': {},
    'paper': dict(q_layers=(2048, 2048, 2048), batch_size=256, n_step=5,
                  max_replay_size=200_000),
}


def config_for_env(env_name: str, preset: str = 'small',
                   **overrides) -> DQNConfig:
  """DQNConfig: preset, then explicit overrides (flags) win.

  One setting serves every gym task: the learner clips rewards to [-1, 1].
  """
  del env_name
  return DQNConfig(**{**PRESETS[preset], **overrides})

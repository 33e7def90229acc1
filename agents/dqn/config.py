"""DQN hyper-parameters: one plain dataclass, filled from flags at the edge."""
import dataclasses
from typing import Optional, Sequence

from agents import replay
from quarl.settings import setting


@dataclasses.dataclass
class DQNConfig(replay.ReplayRegime):
  """Defaults (`small`) let gym CartPole-v1 learn in ~1-2 minutes on 2 cores."""
  q_layers: Sequence[int] = setting((256, 256),
                                    'Q-network MLP hidden widths')
  batch_size: int = setting(64, 'Learner batch size')
  n_step: int = setting(3, 'N-step return length')
  discount: float = setting(0.99, 'Discount per env step')
  learning_rate: float = setting(1e-3, 'Adam learning rate')
  target_update_period: int = setting(
      100, 'Learner steps between target network copies')
  min_replay_size: int = setting(1000, 'Transitions before learning starts')
  max_replay_size: int = setting(100_000, 'Replay capacity')
  samples_per_insert: Optional[float] = setting(
      8.0, 'Replay ratio: learner samples per inserted transition')
  priority_exponent: float = setting(
      0.6, 'Prioritised replay: sampling ~ priority ** exponent')
  importance_sampling_exponent: float = setting(
      0.2, 'Exponent of the importance weights that correct that bias')
  epsilon_base: float = setting(
      0.4, 'Actor i\'s epsilon is Ape-X\'s base ** (1 + alpha * i / (N - 1))')
  epsilon_alpha: float = setting(7.0, 'See epsilon_base')


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

"""PPO hyper-parameters: A2C's fields plus the clip, other defaults."""
import dataclasses

from agents.a2c.config import A2CConfig
from quarl.settings import setting


@dataclasses.dataclass
class PPOConfig(A2CConfig):
  """Schulman et al. 2017's Atari PPO as Stable-Baselines3 and CleanRL run
  it (Adam 2.5e-4, clip 0.1, GAE lambda 0.95, 4 epochs of 4 shuffled
  minibatches over each batch), with batches of `batch_size` trajectories
  of `unroll_length` steps sized for 2 cores. The RL Zoo anneals the
  learning rate and clip to 0 over the run; here `anneal_steps` says over
  how many learner steps (a sweep sets it from its env-step budget), as a
  run's end is otherwise unknown to its learner."""
  batch_size: int = setting(8, 'Trajectories per learner batch')
  learning_rate: float = setting(2.5e-4, 'Adam learning rate at the start')
  gae_lambda: float = setting(0.95, 'GAE lambda')
  num_epochs: int = setting(4, 'Passes over each batch')
  num_minibatches: int = setting(
      4, 'Gradient steps per pass, each on an equal share of the batch\'s '
      'steps shuffled across trajectories')
  clip_epsilon: float = setting(0.1, 'Clip of the probability ratio at the '
                                'start')
  anneal_steps: int = setting(
      0, 'Learner steps over which the learning rate and clip fall '
      'linearly to 0 (0: both constant)')


# `paper` is the PPO paper's batch: 8 actors x 128 steps per update, and a
# queue of one batch, so the data lags the learner as little as it can.
PRESETS = {
    'small': {},
    'paper': dict(unroll_length=128, batch_size=8, queue_size=8,
                  calibration_size=8),
}


def config_for_env(env_name: str, preset: str = 'small',
                   **overrides) -> PPOConfig:
  """PPOConfig: preset, then explicit overrides (flags) win."""
  del env_name
  return PPOConfig(**{**PRESETS[preset], **overrides})

"""TD3 hyper-parameters: the paper's values, one CPU-sized exception."""
import dataclasses
from typing import Optional, Sequence

from agents import replay
from quarl.settings import setting


@dataclasses.dataclass
class TD3Config(replay.ReplayRegime):
  """Fujimoto et al. 2018 (TD3) at a CPU-sized batch and width (see
  PRESETS['paper'] for the paper's own).

  batch_size 64 instead of the paper's 256: samples_per_insert equals the
  batch, the paper's replay ratio of one gradient step per environment step,
  so the learner's step rate caps the actors' environment steps. On the 2-core
  CPU machine (HalfCheetah sizes) a step took ~2.6 ms at 64 and ~7 ms at 256:
  ~2.7x more environment steps per second, with the cores left to actors.
  """
  policy_layers: Sequence[int] = setting((256, 256),
                                         'Policy MLP hidden widths')
  critic_layers: Sequence[int] = setting((256, 256),
                                         'Twin critics\' hidden widths')
  batch_size: int = setting(64, 'Learner batch size')
  n_step: int = setting(1, 'N-step return length')
  discount: float = setting(0.99, 'Discount per env step')
  policy_learning_rate: float = setting(3e-4, 'Policy Adam learning rate')
  critic_learning_rate: float = setting(3e-4, 'Critic Adam learning rate')
  tau: float = setting(
      0.005, 'Polyak rate of the target networks, updated with the policy')
  policy_update_period: int = setting(
      2, 'Policy and target updates every this many critic updates')
  target_noise: float = setting(
      0.2, 'Target policy smoothing noise, in units of the action '
      'half-range')
  target_noise_clip: float = setting(0.5, 'Clip of that noise')
  min_replay_size: int = setting(
      10_000, 'Transitions before learning starts (the paper waits 10k)')
  random_warmup_steps: int = setting(
      10_000, 'Uniform-random env steps across all actors before the policy '
      'acts')
  max_replay_size: int = setting(1_000_000, 'Replay capacity (FIFO)')
  samples_per_insert: Optional[float] = setting(
      64.0, 'Replay ratio: learner samples per inserted transition (equal '
      'to the batch: one update per env step, as the paper)')
  sigma_min: float = setting(
      0.05, 'Actor i\'s Gaussian sigma is log-spaced in [sigma_min, '
      'sigma_max], in units of the action half-range; one actor gets '
      'sqrt(min * max) = 0.1, the paper\'s')
  sigma_max: float = setting(0.2, 'See sigma_min')


# `small` (the defaults) is sized for a 2-core machine. `paper` is the TD3
# paper's setting, which its authors' learning curves (sfujim/TD3
# learning_curves/) were made with: 400-300 networks, Adam at 1e-3 for both,
# batch 100 at one update per environment step, learning from the end of the
# first 1,000-step episode (docs/results.md, "A faithful dense TD3").
PRESETS = {
    'small': {},
    'paper': dict(policy_layers=(400, 300), critic_layers=(400, 300),
                  batch_size=100, samples_per_insert=100.0,
                  policy_learning_rate=1e-3, critic_learning_rate=1e-3,
                  min_replay_size=1000),
}


def config_for_env(env_name: str, preset: str = 'small',
                   **overrides) -> TD3Config:
  """TD3Config: preset, then explicit overrides (flags) win.

  The paper uses one setting for every MuJoCo task, so `env_name` changes
  nothing (target noise already scales with each task's action range).
  """
  del env_name
  return TD3Config(**{**PRESETS[preset], **overrides})

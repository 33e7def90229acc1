"""CompressionConfig: every knob of a compression controller, its default
and its help, in one place (launch.train and launch.classify make their
`--compression.*` flags from it; make_controller fills unset knobs from it).
"""
import dataclasses
from typing import Optional

from quarl.settings import setting

COMPRESSION_KINDS = ('none', 'gst', 'prune', 'static', 'rigl')


@dataclasses.dataclass(frozen=True)
class CompressionConfig:
  """Knobs of the learner-side compression controller (quarl.compression).

  Knobs a kind does not use are ignored by it (block_size for 'prune' sets
  the mask group size).
  """
  kind: str = setting(
      'none', f'{" | ".join(COMPRESSION_KINDS)}: gst is block-circulant '
      'layers, then reward-aware group pruning; prune is the iterative '
      'magnitude pruning baseline (Zhu & Gupta\'s cubic schedule); static '
      'and rigl train sparse from scratch at s_final (a random '
      'Erdos-Renyi-Kernel mask from step 0, kept; rigl moves it by weight '
      'magnitude and dense gradient)')
  block_size: int = setting(
      4, 'GST circulant block size B (2, 4 or 8); also the group size (BxB) '
      'of pruning masks')
  s_shift: float = setting(
      1.0, 'GST hands over from circulant to pruned when the target '
      'sparsity reaches s_shift * (1 - 1/B); in (0, 1]')
  transform: str = setting(
      'none', 'GST block-size transform (B=4): projection (B4 -> B2 at the '
      's_shift point, 2x2 pruning from CR 0.5), b4_friendly_b2 (B4 -> '
      'block4-friendly B2, 4x4 pruning from CR 0.81), b4_friendly_b4 '
      '(block4-friendly B2 -> B4, lossless; 4x4 pruning from CR 0.75), or '
      'none (circulant -> pruning at the s_shift point)')
  s_init: float = setting(0.0, 'Target sparsity at the schedule start')
  s_final: float = setting(0.9, 'Target sparsity at the schedule end')
  # 0 to 20k: a few minutes of learner steps on a small machine, so a
  # default run shows the whole ramp; reproduce_gst sets the field's
  # 20%-80% schedule from each run's budget, launch.classify 20%-80% of its
  # optimizer steps when these are not given.
  begin_step: int = setting(
      0, 'Learner (optimizer) step where the cubic schedule starts')
  end_step: int = setting(
      20_000, 'Step where the schedule reaches s_final')
  reward_window: int = setting(
      5, 'GST: evaluations (launch.classify: epochs) in the return moving '
      'average')
  reward_delta: float = setting(
      0.1, 'GST: pause the clock when the moving average falls below its '
      'best by more than this fraction of (best - reference), or of '
      '|reference| while the policy has learned less; the reference is the '
      'random policy\'s return (launch.classify: chance accuracy)')
  step_back: float = setting(
      0.05, 'GST: sparsity given back on a sustained drop')
  patience: int = setting(
      3, 'GST: evaluations below the band before stepping back')
  reward_reference: Optional[float] = setting(
      None, 'GST: the return its pause band is measured from; unset: the '
      'launcher measures the random policy\'s (launch/runtime/baselines.py)')
  granularity: str = setting(
      'block', 'block (BxB groups) or element pruning masks')
  # RigL on MuJoCo (google-research/rigl, rl/tfagents/configs/
  # sac_mujoco_sparse_config.gin): masks move every 1000 steps, half the
  # active weights at first, the fraction decaying (cosine) to 0 at 80% of
  # training, which is end_step under reproduce_gst's standard schedule.
  topology_every: int = setting(
      1000, 'RigL: learner steps between mask updates (a multiple of '
      'update_every); none at or after end_step')
  drop_fraction: float = setting(
      0.5, 'RigL: fraction of active weights dropped and regrown at the '
      'first update, decaying (cosine) to 0 at end_step')
  update_every: int = setting(
      100, 'Learner steps between controller syncs (clock, hand-over, mask '
      'refresh)')
  log_every: int = setting(
      100, 'compression.csv gets a row every this many learner steps')

  def controller_knobs(self):
    knobs = dataclasses.asdict(self)
    for launcher_only in ('kind', 'log_every'):
      del knobs[launcher_only]
    return knobs

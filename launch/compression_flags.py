"""The compression flags, defined once for every entry point that trains a
compressible network (launch.train's RL learners, launch.classify).

Names are CompressionConfig's knobs as users type them; `compression_config`
turns them into the one CompressionConfig both entry points hand to
quarl.compression.make_controller.
"""
from typing import Any

from absl import flags

from launch.config import CompressionConfig

KIND = flags.DEFINE_string(
    'compression', 'none', 'none | gst (block-circulant, then reward-aware '
    'group pruning) | prune (iterative magnitude pruning baseline).')
BLOCK_SIZE = flags.DEFINE_integer(
    'gst_block_size', 4, 'GST circulant block size B (2, 4 or 8); also the '
    'group size of pruning masks.')
S_SHIFT = flags.DEFINE_float(
    'gst_s_shift', 1.0, 'Hand over from circulant to pruned when the target '
    'sparsity reaches S_shift * (1 - 1/B); in (0, 1].')
_TRANSFORM = flags.DEFINE_string(
    'gst_transform', 'none', 'GST block-size transform (B=4): projection '
    '(B4 -> B2 at the S_shift point, 2x2 pruning from CR 0.5), '
    'b4_friendly_b2 (B4 -> block4-friendly B2, 4x4 pruning from CR 0.81), '
    'b4_friendly_b4 (block4-friendly B2 -> B4, lossless; 4x4 pruning from '
    'CR 0.75), or none (circulant -> pruning at the S_shift point).')
_SPARSITY_INIT = flags.DEFINE_float('sparsity_init', 0.0,
                                    'Target sparsity at the schedule start.')
_SPARSITY_FINAL = flags.DEFINE_float('sparsity_final', 0.9,
                                     'Target sparsity at the schedule end.')
_BEGIN = flags.DEFINE_integer(
    'prune_begin_step', None, 'Learner (optimizer) step where the schedule '
    'starts; default: launch.train 0, launch.classify 20% of the run.')
_END = flags.DEFINE_integer(
    'prune_end_step', None, 'Step where it reaches the final sparsity; '
    'default: launch.train 20,000, launch.classify 80% of the run.')
_REWARD_WINDOW = flags.DEFINE_integer(
    'reward_window', 5, 'GST: evaluations (launch.classify: epochs) in the '
    'return moving average.')
_REWARD_DELTA = flags.DEFINE_float(
    'reward_delta', 0.1, 'GST: pause the clock when the moving average falls '
    'below its best by more than this fraction of (best - reference), or of '
    '|reference| while the policy has learned less; the reference is the '
    'random policy\'s return (launch.classify: chance accuracy).')
_STEP_BACK = flags.DEFINE_float(
    'reward_step_back', 0.05, 'GST: sparsity given back on a sustained drop.')
_PATIENCE = flags.DEFINE_integer(
    'reward_patience', 3, 'GST: evaluations below before stepping back.')
_GRANULARITY = flags.DEFINE_string('prune_granularity', 'block',
                                   'block (BxB groups) or element masks.')


def compression_config(default_begin_step: int, default_end_step: int,
                       **extra: Any) -> CompressionConfig:
  """The flags' CompressionConfig; the schedule steps fall back to the
  entry point's defaults, and `extra` sets knobs with no flag here."""
  begin = _BEGIN.value if _BEGIN.value is not None else default_begin_step
  end = _END.value if _END.value is not None else default_end_step
  return CompressionConfig(
      kind=KIND.value, block_size=BLOCK_SIZE.value, s_shift=S_SHIFT.value,
      transform=_TRANSFORM.value, s_init=_SPARSITY_INIT.value,
      s_final=_SPARSITY_FINAL.value, begin_step=begin, end_step=end,
      reward_window=_REWARD_WINDOW.value, reward_delta=_REWARD_DELTA.value,
      step_back=_STEP_BACK.value, patience=_PATIENCE.value,
      granularity=_GRANULARITY.value, **extra)

"""GST compression: block-circulant maths, masks, schedules, controllers, CR.

A learner owns ordinary dense kernels; a controller from `make_controller`
re-imposes structure on its `CompressibleLinear` and `CompressibleConv2D`
layers: `constrain()` inside the learner's compiled step after every optimizer
update, `sync(learner_step)` (schedule, masks, CR) every `update_every`
steps from the learner node. `after_optimizer_step` does both eagerly, for
callers outside a compiled step.
"""
from quarl.compression.circulant import circulant_compression
from quarl.compression.circulant import expand
from quarl.compression.circulant import project
from quarl.compression.circulant import project_dense
from quarl.compression.config import COMPRESSION_KINDS
from quarl.compression.config import CompressionConfig
from quarl.compression.controller import CompressionController
from quarl.compression.controller import GstController
from quarl.compression.controller import IterativePruningController
from quarl.compression.controller import NoCompression
from quarl.compression.controller import make_controller
from quarl.compression.controller import needs_gradients
from quarl.compression.layers import CompressibleConv2D
from quarl.compression.layers import CompressibleKernel
from quarl.compression.layers import CompressibleLinear
from quarl.compression.layers import CompressibleMLP
from quarl.compression.layers import dense_param_count
from quarl.compression.layers import make_compressible_mlp
from quarl.compression.masks import make_mask
from quarl.compression.nature_cnn import NatureCNNTorso
from quarl.compression.schedules import CubicSchedule
from quarl.compression.schedules import RewardAwareClock
from quarl.compression.transforms import b2_to_b4
from quarl.compression.transforms import b4_to_b2
from quarl.compression.transforms import to_friendly_b2
from quarl.compression.transforms import weight_shift

__all__ = [
    'COMPRESSION_KINDS', 'CompressionConfig', 'CompressibleConv2D', 'CompressibleKernel', 'CompressibleLinear',
    'CompressibleMLP', 'CompressionController', 'CubicSchedule',
    'GstController', 'IterativePruningController', 'NatureCNNTorso',
    'NoCompression', 'RewardAwareClock', 'b2_to_b4', 'b4_to_b2',
    'circulant_compression', 'dense_param_count', 'expand',
    'make_compressible_mlp', 'make_controller', 'make_mask', 'needs_gradients', 'project',
    'project_dense', 'to_friendly_b2', 'weight_shift',
]

"""Policy -> TFLite flatbuffers: ActorQ's post-training quantization, and
publishing by patching later weights into an earlier conversion."""
from quarl.quantization.converter import ConvertedModel
from quarl.quantization.converter import NonFiniteWeightsError
from quarl.quantization.converter import PRECISIONS
from quarl.quantization.converter import UnloadableModelError
from quarl.quantization.converter import convert_policy
from quarl.quantization.inspection import weight_dtypes
from quarl.quantization.patcher import PolicyPublisher

__all__ = [
    'ConvertedModel', 'NonFiniteWeightsError', 'PRECISIONS', 'PolicyPublisher',
    'UnloadableModelError', 'convert_policy', 'weight_dtypes',
]

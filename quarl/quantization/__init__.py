"""Policy -> TFLite flatbuffer conversion (ActorQ's post-training quantization)."""
from quarl.quantization.converter import ConvertedModel
from quarl.quantization.converter import NonFiniteWeightsError
from quarl.quantization.converter import PRECISIONS
from quarl.quantization.converter import UnloadableModelError
from quarl.quantization.converter import convert_policy
from quarl.quantization.inspection import weight_dtypes

__all__ = [
    'ConvertedModel', 'NonFiniteWeightsError', 'PRECISIONS',
    'UnloadableModelError', 'convert_policy', 'weight_dtypes',
]

"""Reads what a flatbuffer really stores, so claims like 'int8' are checked."""
import collections
from typing import Dict

import numpy as np

from quarl.litert import load_interpreter


def weight_dtypes(model_bytes: bytes) -> Dict[str, int]:
  """Counts constant (weight) elements per dtype name in a TFLite model.

  Constant tensors are the ones the model ships with data; activations have
  none until invoked. Returns e.g. {'int8': 196608, 'int32': 774}.
  """
  interpreter = load_interpreter(model_bytes)
  counts = collections.Counter()
  for detail in interpreter.get_tensor_details():
    try:
      data = interpreter.get_tensor(detail['index'])
    except ValueError:  # Tensors without data (intermediates) refuse reads.
      continue
    if detail['name'].startswith('serving_default') or not data.size:
      continue
    counts[np.dtype(detail['dtype']).name] += int(np.prod(detail['shape']))
  return dict(counts)

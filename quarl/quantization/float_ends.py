"""Actors' int8 models: int8 inside, float at the two ends that meet the world.

A trained D4PG Pendulum policy converted fully to int8 was off by 0.21-0.26
of the action range at the 95th percentile, and rounding the observation
alone to its int8 grid (all else float) gave 0.19-0.24 of it
(benchmarks/int8_fidelity.py --run_dir). Full int8 quantizes the whole
input vector with one scale, which the widest dimension sets (angular
velocity, +-7), so cos/sin of the angle move in steps of ~14/255 and the
upright states a trained policy lives in are blurred. The action head's
output came next (0.05): saturated states stretch its pre-tanh range to
tens while most states sit in tanh's linear +-1.

So the layers that meet the world run in float: on vector observations
everything before the second weighted layer (the input layer, and Acme's
LayerNorm-tanh block, which LiteRT runs slower in int8 than in float), and
on every model the last weighted layer and what follows it. Images keep
their first convolution in int8: a frame's pixels share one scale already.
The hidden layers, nearly all of the multiply-adds, stay int8. A model with
no hidden layer left in between stays fully int8.

TF 2.8's public converter cannot leave chosen ops in float, so this runs its
two MLIR steps itself: calibrate, then quantize with the float ops
denylisted (what tf.lite.experimental.QuantizationDebugger does without
its instrumented debug model). TensorFlow is pinned in the lock.
"""
from typing import List

import tensorflow as tf
from tensorflow.lite.python import convert as tflite_convert
from tensorflow.lite.python import schema_py_generated as schema

_OPS = schema.BuiltinOperator
_WEIGHTED = (_OPS.FULLY_CONNECTED, _OPS.CONV_2D, _OPS.DEPTHWISE_CONV_2D)


def float_end_nodes(float_model: bytes) -> List[str]:
  """Names of the ops a float (or calibrated) model keeps in float."""
  model = schema.Model.GetRootAsModel(bytearray(float_model), 0)
  graph = model.Subgraphs(0)
  codes, names = [], []
  for i in range(graph.OperatorsLength()):
    op = graph.Operators(i)
    code = model.OperatorCodes(op.OpcodeIndex())
    codes.append(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()))
    names.append(graph.Tensors(int(op.Outputs(0))).Name().decode())
  weighted = [i for i, code in enumerate(codes) if code in _WEIGHTED]
  # Pixels (flattened or not) meet a convolution first; vectors a dense one.
  vector_input = bool(weighted) and (
      codes[weighted[0]] == _OPS.FULLY_CONNECTED)
  int8_layers = weighted[1:-1] if vector_input else weighted[:-1]
  if not int8_layers:
    return []
  return names[:int8_layers[0] if vector_input else 0] + names[weighted[-1]:]


def convert(converter: tf.lite.TFLiteConverter, sparse: bool) -> bytes:
  """The int8 model of a converter set up for full-integer quantization
  (optimizations, representative dataset), its ends left in float."""
  converter.experimental_new_quantizer = True
  converter._experimental_calibrate_only = True  # pylint: disable=protected-access
  calibrated = converter.convert()
  model = tflite_convert.mlir_quantize(
      calibrated, denylisted_nodes=float_end_nodes(calibrated))
  return tflite_convert.mlir_sparsify(model) if sparse else model

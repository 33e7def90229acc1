"""Publishes a policy by writing its new weights into an earlier conversion.

The quantizer publishes every few seconds, and between publishes only the
weights change, never the architecture; rerunning the TFLite converter
(SavedModel, MLIR, calibration) each time cost 0.6-1.8 s of CPU at 3x256.
A PolicyPublisher converts once and keeps that flatbuffer as a template,
with numpy views of the bytes a publish changes: the weights and, for int8,
every scale and zero point. Later publishes write there what TF 2.8's
converter would have computed (int8_rules.py), calibrating by running the
model's float graph over the calibration observations in numpy. Every
model, patched or not, is still run in the probe's child and measured
before anyone gets it.

The template is a conversion of stand-in weights (the real ones plus a
little noise): TFLite drops all-zero biases (as at initialisation) and
merges equal constants, which would leave a variable no tensor of its own;
with stand-ins each keeps one, found again by its values. Patching that
template with the stand-ins must give back the converter's own numbers
before it is used.

Patched: 'fp32' models, and 'int8' models built from FULLY_CONNECTED (ReLU
or none), CONV_2D (VALID, undilated, ReLU or none; weights per channel),
RESHAPE, ADD, SUB, MUL, SQUARED_DIFFERENCE, MEAN, RSQRT and TANH: ReLU
MLPs, Acme's Linear-LayerNorm-tanh torso and the Nature CNN (A2C and PPO on
pixels), i.e. every agent's export. GST's layers need nothing more: in every
phase (dense, block-circulant, pruned) a forward pass reads only their
dense `w` and `b`, so a compressed layer is patched as a dense one.
Everything else converts fully at every publish: 'fp16' and 'dynamic_int8'
(converter paths not reproduced), `sparse=True` (the sparse format's layout
follows where the zeros are), and any model the template checks refuse.
"""
import dataclasses
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging
from tensorflow.lite.python import schema_py_generated as schema

from quarl.litert import ModelProbe
from quarl.quantization import converter
from quarl.quantization import int8_rules

PATCHABLE_PRECISIONS = ('fp32', 'int8')

_OPS = schema.BuiltinOperator
_TYPES = schema.TensorType
_DTYPES = {_TYPES.FLOAT32: np.float32, _TYPES.INT8: np.int8,
           _TYPES.INT32: np.int32}
_ACTIVATIONS = {schema.ActivationFunctionType.NONE: lambda x: x,
                schema.ActivationFunctionType.RELU:
                    lambda x: np.maximum(x, 0.0)}
# The float meaning of every operator the int8 route runs to calibrate.
_ELEMENTWISE = {_OPS.ADD: np.add, _OPS.SUB: np.subtract,
                _OPS.MUL: np.multiply,
                _OPS.SQUARED_DIFFERENCE: lambda a, b: np.square(a - b)}
_UNARY = {_OPS.QUANTIZE: lambda x: x, _OPS.DEQUANTIZE: lambda x: x,
          _OPS.RSQRT: lambda x: 1.0 / np.sqrt(x), _OPS.TANH: np.tanh}
_FUSED_OPTIONS = {_OPS.FULLY_CONNECTED: schema.FullyConnectedOptions,
                  _OPS.CONV_2D: schema.Conv2DOptions,
                  _OPS.ADD: schema.AddOptions, _OPS.SUB: schema.SubOptions,
                  _OPS.MUL: schema.MulOptions}
# Operators whose constant weights and bias are variables, and how a
# variable's axes map to the tensor's: FULLY_CONNECTED stores [out, in],
# CONV_2D [out, h, w, in] (Sonnet: [in, out] and [h, w, in, out]).
_WEIGHTED = (_OPS.FULLY_CONNECTED, _OPS.CONV_2D)
_KERNEL_AXES = {2: (1, 0), 4: (3, 0, 1, 2)}
# Outputs that take their input's scale and zero point, not calibrated.
_SAME_SCALE = (_OPS.RESHAPE,)
# Floats of im2col patches the float twin of CONV_2D gathers at a time.
_PATCH_CHUNK = 1 << 22
# Outputs whose range TFLite fixes instead of calibrating (tanh: 1/128, 0).
_FIXED_RANGE = (_OPS.TANH,)


class _NotPatchable(ValueError):
  """This model cannot serve as a template."""


def _options(op, options_class):
  table = op.BuiltinOptions()
  if table is None:
    raise _NotPatchable('an operator without its options')
  options = options_class()
  options.Init(table.Bytes, table.Pos)
  return options


def _shape(tensor) -> Tuple[int, ...]:
  shape = tensor.ShapeAsNumpy()
  return () if isinstance(shape, int) else tuple(int(d) for d in shape)


@dataclasses.dataclass(frozen=True)
class _Quantization:
  """Writable views of one tensor's scale and zero point, or of one per
  slice along axis 0 (CONV_2D's per-channel weights and biases)."""
  scale: np.ndarray
  zero_point: np.ndarray

  def write(self, scale, zero_point) -> None:
    self.scale[...] = scale
    self.zero_point[...] = zero_point

  def along(self, values: np.ndarray, rank: int):
    """`values` (the scales or zero points) broadcastable over the tensor."""
    if values.size == 1:
      return values[0]
    return values.reshape((-1,) + (1,) * (rank - 1))


@dataclasses.dataclass(frozen=True)
class _Op:
  code: int
  inputs: Tuple[int, ...]  # -1: an absent optional input.
  outputs: Tuple[int, ...]
  activation: Callable[[np.ndarray], np.ndarray]
  keep_dims: bool
  strides: Tuple[int, int]  # CONV_2D's (height, width).
  output_shape: Tuple[int, ...]


class _Template:
  """A converted model's bytes, and views of every number a publish sets."""

  def __init__(self, model_bytes: bytes, precision: str,
               stand_ins: Sequence[np.ndarray]):
    """`stand_ins`: the values `model_bytes` was converted from, one per
    variable; each must be found in exactly one constant tensor."""
    self._buffer = bytearray(model_bytes)
    self._int8 = precision == 'int8'
    self._model = schema.Model.GetRootAsModel(self._buffer, 0)
    if self._model.SubgraphsLength() != 1:
      raise _NotPatchable(f'{self._model.SubgraphsLength()} subgraphs')
    self._graph = self._model.Subgraphs(0)
    self._input = int(self._graph.Inputs(0))
    self._data = {i: self._constant_data(i)
                  for i in range(self._graph.TensorsLength())}
    self._params = {i: self._quantization(i)
                    for i in range(self._graph.TensorsLength())}
    # Per variable: its tensor, and the axes that take the variable to the
    # tensor's layout (None: the same layout).
    self._slots = [self._find(value) for value in stand_ins]
    if self._int8:
      self._ops = [self._op(self._graph.Operators(i))
                   for i in range(self._graph.OperatorsLength())]
      self._check_int8_graph()
    bounds = sorted(np.byte_bounds(view) for view in self.views())
    if any(start < end for (_, end), (start, _) in zip(bounds, bounds[1:])):
      raise _NotPatchable('two tensors share the bytes of a patched number')

  def _constant_data(self, index: int) -> Optional[np.ndarray]:
    tensor = self._graph.Tensors(index)
    data = self._model.Buffers(tensor.Buffer()).DataAsNumpy()
    if isinstance(data, int) or not data.size or tensor.Type() not in _DTYPES:
      return None
    if tensor.Sparsity() is not None:
      raise _NotPatchable(f'sparse tensor {tensor.Name()!r}')
    return data.view(_DTYPES[tensor.Type()]).reshape(_shape(tensor))

  def _quantization(self, index: int) -> Optional[_Quantization]:
    tensor = self._graph.Tensors(index)
    params = tensor.Quantization()
    if params is None or not params.ScaleLength():
      return None
    channels = params.ScaleLength()
    if params.ZeroPointLength() != channels or channels > 1 and (
        params.QuantizedDimension() != 0 or
        _shape(tensor)[:1] != (channels,)):
      raise _NotPatchable('a tensor quantized per channel other than '
                          'along axis 0')
    return _Quantization(params.ScaleAsNumpy(), params.ZeroPointAsNumpy())

  def _float(self, index: int) -> np.ndarray:
    """A constant's value as the float graph sees it."""
    data, params = self._data[index], self._params[index]
    if params is None:
      return data
    return ((data.astype(np.float32) -
             params.along(params.zero_point, data.ndim)) *
            params.along(params.scale, data.ndim)).astype(np.float32)

  def _find(self, value: np.ndarray
            ) -> Tuple[int, Optional[Tuple[int, ...]]]:
    """The one constant holding `value` (to within its quantization step),
    and the axes that take `value` to its layout (kernels: _KERNEL_AXES)."""
    layouts = [None] + ([_KERNEL_AXES[value.ndim]]
                        if value.ndim in _KERNEL_AXES else [])
    found = []
    for index, data in self._data.items():
      params = self._params[index]
      if data is None or data.dtype == np.int32 and params is None:
        continue
      step = (0.0 if params is None else
              params.along(params.scale, data.ndim).astype(np.float64))
      for axes in layouts:
        layout = value if axes is None else np.transpose(value, axes)
        # Half a step, and float rounding of large int32 biases.
        if data.shape == layout.shape and np.all(
            np.abs(self._float(index) - layout) <=
            0.51 * step + 1e-6 * np.abs(layout)):
          found.append((index, axes))
    if len(found) != 1:
      raise _NotPatchable(f'a {list(value.shape)} variable is held by '
                          f'{len(found)} constants, not one')
    return found[0]

  def _op(self, op) -> _Op:
    code = self._model.OperatorCodes(op.OpcodeIndex())
    code = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    if code not in (*_WEIGHTED, _OPS.MEAN, *_SAME_SCALE, *_ELEMENTWISE,
                    *_UNARY):
      raise _NotPatchable(f'operator {code} has no float twin here')
    activation, keep_dims = _ACTIVATIONS[
        schema.ActivationFunctionType.NONE], False
    strides = (1, 1)
    if code in _FUSED_OPTIONS:
      options = _options(op, _FUSED_OPTIONS[code])
      if options.FusedActivationFunction() not in _ACTIVATIONS:
        raise _NotPatchable(f'operator {code} fuses an activation other '
                            'than ReLU')
      activation = _ACTIVATIONS[options.FusedActivationFunction()]
      if code == _OPS.FULLY_CONNECTED and options.WeightsFormat() != (
          schema.FullyConnectedOptionsWeightsFormat.DEFAULT):
        raise _NotPatchable('shuffled FULLY_CONNECTED weights')
      if code == _OPS.CONV_2D:
        strides = _conv_strides(options)
    if code == _OPS.MEAN:
      keep_dims = bool(_options(op, schema.ReducerOptions).KeepDims())
    outputs = tuple(int(i) for i in op.OutputsAsNumpy())
    return _Op(code, tuple(int(i) for i in op.InputsAsNumpy()), outputs,
               activation, keep_dims, strides,
               _shape(self._graph.Tensors(outputs[0])))

  def _check_int8_graph(self) -> None:
    """Every variable feeds one op that int8_rules can quantize it for, and
    every op's inputs exist when it runs."""
    consumers: Dict[int, List[Tuple[_Op, int]]] = {}
    available = {self._input}
    for op in self._ops:
      for position, index in enumerate(op.inputs):
        if index >= 0 and index not in available and (
            self._data[index] is None):
          raise _NotPatchable('operators are not in execution order')
        consumers.setdefault(index, []).append((op, position))
      available.update(op.outputs)
      input_shape = _shape(self._graph.Tensors(op.inputs[0]))
      rank = len(input_shape)
      if op.code == _OPS.FULLY_CONNECTED and rank != 2:
        raise _NotPatchable('a FULLY_CONNECTED that flattens its input')
      if op.code == _OPS.CONV_2D and rank != 4:
        raise _NotPatchable('a CONV_2D not on [batch, h, w, c] input')
      if op.code in _SAME_SCALE and (
          input_shape[:1] != (1,) or op.output_shape[:1] != (1,) or
          (self._params[op.inputs[0]] is None) !=
          (self._params[op.outputs[0]] is None)):
        raise _NotPatchable('a RESHAPE that moves the batch axis or '
                            'changes type')
      if op.code == _OPS.MEAN and (self._data[op.inputs[1]] is None or 0 in
                                   np.mod(self._data[op.inputs[1]], rank)):
        raise _NotPatchable('a MEAN over the batch axis or unknown axes')
    variables = {index for index, _ in self._slots}
    for index in variables:
      uses = consumers.get(index, [])
      if len(uses) != 1:
        raise _NotPatchable('a variable not used once')
      op, position = uses[0]
      # float_ends.py leaves ops in float: their variables are float too.
      if (self._params[index] is None) != (
          self._params[op.outputs[0]] is None):
        raise _NotPatchable(f'a variable of operator {op.code} not of its '
                            'type (int8 or float)')
      if op.code in _WEIGHTED:
        if position not in (1, 2) or not {op.inputs[1],
                                          op.inputs[2]} <= variables:
          raise _NotPatchable(f'operator {op.code}: weights and bias not '
                              'both variables')
      elif op.code not in _ELEMENTWISE:
        raise _NotPatchable(f'a variable feeding operator {op.code}')

  def views(self) -> List[np.ndarray]:
    """Every view a publish writes."""
    views = [self._data[index] for index, _ in self._slots]
    if self._int8:
      quantized = [index for index, _ in self._slots
                   if self._params[index] is not None] + [
          index for op in self._ops if op.code not in _FIXED_RANGE
          for index in op.outputs if self._params[index] is not None]
      views += [view for index in quantized
                for view in (self._params[index].scale,
                             self._params[index].zero_point)]
    return views

  def patched(self, values: Sequence[np.ndarray],
              calibration_obs: np.ndarray) -> bytes:
    """The model holding `values` (one per variable, as the stand-ins), int8
    scales calibrated on `calibration_obs`."""
    floats = {index: value if axes is None else np.transpose(value, axes)
              for (index, axes), value in zip(self._slots, values)}
    int8_variables = {index for index in floats
                      if self._params[index] is not None}
    for index in floats.keys() - int8_variables:
      self._data[index][...] = floats[index]
    if not self._int8:
      return bytes(self._buffer)
    scales = self._write_activation_params(floats, calibration_obs)
    for op in self._ops:
      if op.code in _WEIGHTED and op.inputs[1] in int8_variables:
        weights, bias = op.inputs[1], op.inputs[2]
        quantize = (int8_rules.quantize_conv if op.code == _OPS.CONV_2D
                    else int8_rules.quantize_fully_connected)
        layer = quantize(floats[weights], floats[bias], scales[op.inputs[0]])
        self._data[weights][...] = layer.weights
        self._data[bias][...] = layer.bias
        self._params[weights].write(layer.weight_scale, 0)
        self._params[bias].write(layer.bias_scale, 0)
      constants = op.inputs if op.code in _ELEMENTWISE else ()
      for index in (i for i in constants if i in int8_variables):
        quantized, scale, zero_point = int8_rules.quantize_constant(
            floats[index])
        self._data[index][...] = quantized
        self._params[index].write(scale, zero_point)
    return bytes(self._buffer)

  def _write_activation_params(self, floats: Dict[int, np.ndarray],
                               calibration_obs: np.ndarray
                               ) -> Dict[int, np.float32]:
    """Runs the float graph over the observations as TFLite's calibrator
    does (every tensor's min and max), writes each activation's scale and
    zero point; returns every activation's scale."""
    tensors = {self._input: calibration_obs}

    def value(index: int) -> np.ndarray:
      if index in tensors:
        return tensors[index]
      return floats[index] if index in floats else self._float(index)

    scales = {}
    # Tensors whose range TFLite fixes: _FIXED_RANGE outputs, and a float
    # one's quantized copy (float_ends.py's LayerNorm block ends in tanh).
    fixed = set()
    for op in self._ops:
      if op.code in _FIXED_RANGE or (op.code == _OPS.QUANTIZE and
                                     op.inputs[0] in fixed):
        fixed.add(op.outputs[0])
      inputs = [value(index) for index in op.inputs if index >= 0]
      if op.code == _OPS.FULLY_CONNECTED:
        output = inputs[0] @ inputs[1].T
        if len(inputs) == 3:
          output = output + inputs[2]
      elif op.code == _OPS.CONV_2D:
        output = _conv2d(inputs[0], inputs[1], op.strides)
        if len(inputs) == 3:
          output = output + inputs[2]
      elif op.code in _SAME_SCALE:
        output = inputs[0].reshape((-1,) + op.output_shape[1:])
      elif op.code == _OPS.MEAN:
        output = np.mean(inputs[0], axis=tuple(int(a) for a in inputs[1]),
                         keepdims=op.keep_dims)
      elif op.code in _ELEMENTWISE:
        output = _ELEMENTWISE[op.code](inputs[0], inputs[1])
      else:
        output = _UNARY[op.code](inputs[0])
      output = op.activation(output).astype(np.float32, copy=False)
      index = op.outputs[0]
      tensors[index] = output
      params = self._params[index]
      if params is None:
        continue
      if op.code in _SAME_SCALE:
        source = self._params[op.inputs[0]]
        params.write(source.scale, source.zero_point)
      elif index not in fixed:
        params.write(*int8_rules.activation_params(output.min(),
                                                   output.max()))
      scales[index] = params.scale[0]
    return scales

  def check(self, stand_ins: Sequence[np.ndarray],
            calibration_obs: np.ndarray) -> None:
    """Patching the stand-ins back must give the converter's own numbers:
    proof of the variable-to-tensor mapping and of int8_rules.

    Raises:
      _NotPatchable: a number disagrees.
    """
    converted = [view.copy() for view in self.views()]
    self.patched(stand_ins, calibration_obs)
    for expected, view in zip(converted, self.views()):
      tolerance = 1 if np.issubdtype(view.dtype, np.integer) else 0
      if not np.allclose(view, expected, rtol=1e-5, atol=tolerance):
        raise _NotPatchable('patching disagrees with the TFLite converter')


def _conv_strides(options) -> Tuple[int, int]:
  """(height, width) strides of a CONV_2D the float twin can run."""
  if options.Padding() != schema.Padding.VALID or (
      options.DilationHFactor(), options.DilationWFactor()) != (1, 1):
    raise _NotPatchable('a CONV_2D with SAME padding or dilation')
  return options.StrideH(), options.StrideW()


def _conv2d(inputs: np.ndarray, kernel: np.ndarray,
            strides: Tuple[int, int]) -> np.ndarray:
  """VALID convolution of NHWC `inputs` with an [out, h, w, in] kernel, as
  matmuls over every output pixel's input patch (im2col)."""
  out, height, width, channels = kernel.shape
  inputs = np.ascontiguousarray(inputs)
  batch, rows, columns, _ = inputs.shape
  rows = (rows - height) // strides[0] + 1
  columns = (columns - width) // strides[1] + 1
  batch_step, row_step, column_step, channel_step = inputs.strides
  # Patches [batch, rows, columns, h, w * in]: in NHWC a kernel row's
  # w * in inputs lie side by side, so gathering them copies whole runs.
  patches = np.lib.stride_tricks.as_strided(
      inputs, (batch, rows, columns, height, width * channels),
      (batch_step, strides[0] * row_step, strides[1] * column_step,
       row_step, channel_step), writeable=False)
  matrix = kernel.reshape(out, -1).T
  output = np.empty((batch, rows, columns, out), np.float32)
  # A few frames at a time, so each gathered block is still in cache when
  # the matmul reads it (twice as fast at 256 frames).
  size = rows * columns * matrix.shape[0]
  chunk = max(1, _PATCH_CHUNK // size)
  for start in range(0, batch, chunk):
    np.matmul(patches[start:start + chunk].reshape(-1, matrix.shape[0]),
              matrix, out=output[start:start + chunk].reshape(-1, out))
  return output


def _read_variables(policy: Callable[[tf.Tensor], tf.Tensor],
                    observation_size: int) -> List[tf.Variable]:
  """The trainable variables a forward pass reads: all the model holds."""
  with tf.GradientTape() as tape:
    policy(tf.zeros([1, observation_size], tf.float32))
  return list(tape.watched_variables())


def _stand_ins(values: Sequence[np.ndarray]) -> List[np.ndarray]:
  """Each value plus a little noise: nonzero and distinct from every other,
  yet in the value's own range (so the template's ranges are like real
  ones)."""
  rng = np.random.default_rng(0)
  return [(value + 0.1 * max(float(np.std(value)), 0.01) *
           rng.standard_normal(value.shape)).astype(np.float32)
          for value in values]


class PolicyPublisher:
  """Turns one network's current weights into a proven TFLite model: by
  conversion the first time, by patching that conversion afterwards."""

  def __init__(self, policy: Callable[[tf.Tensor], tf.Tensor],
               observation_size: int, precision: str, sparse: bool = False,
               postprocess: Optional[Callable[[np.ndarray],
                                              np.ndarray]] = None,
               output_scale=None, probe: Optional[ModelProbe] = None):
    """Arguments as for converter.convert_policy; `policy` is a Sonnet
    module (anything with `.variables`) whose values change between
    publishes."""
    converter.check_precision(precision)
    self._policy = policy
    self._observation_size = observation_size
    self._precision = precision
    self._sparse = sparse
    self._postprocess = postprocess
    self._output_scale = output_scale
    self._probe = probe
    self._variables = _read_variables(policy, observation_size)
    self._template: Optional[_Template] = None
    self._patchable = precision in PATCHABLE_PRECISIONS and not sparse

  def publish(self, calibration_obs: np.ndarray,
              held_obs: Optional[np.ndarray] = None
              ) -> converter.ConvertedModel:
    """The network's current weights as a model proven to load, with its
    fidelity measured on `held_obs` (default: the calibration ones).

    Raises:
      ValueError: empty calibration data.
      NonFiniteWeightsError: NaN/Inf in the network's variables.
      UnloadableModelError: the model does not load or run.
    """
    calibration_obs, held_obs = converter.checked_inputs(
        self._precision, calibration_obs, held_obs)
    converter.check_finite(self._policy.variables)
    start = time.perf_counter()
    model_bytes, route = self.make_bytes(calibration_obs)
    return converter.prove_and_measure(
        self._policy, model_bytes, self._precision,
        time.perf_counter() - start, route, held_obs, self._postprocess,
        self._output_scale, self._probe)

  def make_bytes(self, calibration_obs: np.ndarray) -> Tuple[bytes, str]:
    """(bytes, route) of the current weights, neither checked nor probed
    (publish() does both). Route: 'converted' if this call ran the TFLite
    converter, else 'patched'."""
    calibration_obs = np.asarray(calibration_obs, np.float32)
    route = 'patched'
    if self._template is None and self._patchable:
      self._template = self._new_template(calibration_obs)
      route = 'converted'
    if self._template is None:
      return self._convert(calibration_obs), 'converted'
    values = [variable.numpy() for variable in self._variables]
    return self._template.patched(values, calibration_obs), route

  def _convert(self, calibration_obs: np.ndarray) -> bytes:
    return converter.convert_to_bytes(
        self._policy, self._policy.variables, self._observation_size,
        self._precision, calibration_obs, self._sparse)

  def _new_template(self, calibration_obs: np.ndarray
                    ) -> Optional[_Template]:
    """A checked template from a conversion of stand-in weights; None (and
    full conversions from now on) if this model cannot be one."""
    values = [variable.numpy() for variable in self._variables]
    stand_ins = _stand_ins(values)
    try:
      for variable, stand_in in zip(self._variables, stand_ins):
        variable.assign(stand_in)
      template = _Template(self._convert(calibration_obs), self._precision,
                           stand_ins)
      template.check(stand_ins, calibration_obs)
      return template
    except _NotPatchable as error:
      logging.warning('every publish converts in full: %s', error)
      self._patchable = False
      return None
    finally:
      for variable, value in zip(self._variables, values):
        variable.assign(value)

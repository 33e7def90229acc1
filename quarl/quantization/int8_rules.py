"""TF 2.8's full-integer (int8) quantization arithmetic, redone in numpy.

So a publish can write new int8 numbers into an earlier conversion instead
of running the converter again (patcher.py), and get the numbers the
converter would have written. Each rule below was read off fresh TF 2.8
conversions (`_experimental_calibrate_only` for the calibration statistics,
the int8 flatbuffer for the rest, crafted ties for the rounding) and is
checked against them in test_patcher.py.

- Calibration (patcher.py runs the float graph): the plain min and max of
  each tensor over every representative observation; no averaging, no
  percentiles.
- Activations, and constants feeding elementwise ops (LayerNorm's scale and
  offset): the range is widened to include 0, and when at most 1e-6 wide
  (a dead ReLU layer, a constant input, an all-zero offset) to
  [-1e-6, 1e-6] for activations but [-5e-7, 5e-7] for constants; scale and
  zero point then come from the minimum in float32 (the converter's
  `legacy_float_scale`). Constants are round(value / scale + zero point).
- FULLY_CONNECTED weights: per tensor (not per channel in 2.8), symmetric
  over [-127, 127], scale max|w| / 127 (max|w| at least 5e-7). Biases:
  int32, scale input_scale * weight_scale.
- When the largest |bias| would take more than half of int32 at that scale,
  the bias scale becomes max|b| / ((2^31 - 1) // 2) and the weight scale
  bias_scale / input_scale; if that moved the weight scale by at most 1e-3,
  the int8 weights keep their unadjusted values (TF 2.8's legacy routine
  ignores the new scale), else they are requantized at it. Reproduced as is:
  the point is to equal the converter.
- CONV_2D weights ([out, h, w, in]): per output channel, each as a
  FULLY_CONNECTED tensor would be: symmetric over [-127, 127], scale
  max|w_c| / 127 with max|w_c| at least 5e-7 (an all-zero, pruned, channel
  gets 1e-6 / 254). Biases: int32, per channel, scale
  input_scale * weight_scale_c. A channel whose |bias| would take more than
  half of int32 gets bias scale |b_c| / ((2^31 - 1) // 2) and weight scale
  bias_scale_c / input_scale, and its weights are requantized at that
  scale (no legacy routine here: the per-channel path always uses the
  stored scales).

All rounding is half away from zero (std::round), not numpy's half-to-even.
"""
import dataclasses
from typing import Tuple

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
_WEIGHT_MAX = 127  # Weights use the narrow range [-127, 127].
# Ranges at most this wide are widened to +-_ACTIVATION_HALF_RANGE
# (calibrated tensors) or +-_CONSTANT_HALF_RANGE (constants).
_NEAR_ZERO_RANGE = 1e-6
_ACTIVATION_HALF_RANGE = 1e-6
_CONSTANT_HALF_RANGE = 5e-7
_BIAS_MAX = np.iinfo(np.int32).max // 2
# The legacy weight routine runs unless its own scale differs from the
# stored (bias-adjusted) one by more than this.
_LEGACY_SCALE_TOLERANCE = 1e-3


@dataclasses.dataclass(frozen=True)
class QuantizedLayer:
  """One FULLY_CONNECTED or CONV_2D layer's constants as the converter
  stores them; the scales are [out] vectors for CONV_2D (per channel)."""
  weights: np.ndarray  # int8 [out, in] or [out, h, w, in].
  weight_scale: np.ndarray  # float32, [] or [out].
  bias: np.ndarray  # int32 [out].
  bias_scale: np.ndarray  # float32, [] or [out].


def round_half_away(values) -> np.ndarray:
  """std::round: halves go away from zero (numpy's round goes to even)."""
  values = np.asarray(values, np.float64)
  return np.sign(values) * np.floor(np.abs(values) + 0.5)


def activation_params(low: float, high: float) -> Tuple[np.float32, int]:
  """(scale, zero point) of an activation calibrated to [low, high]."""
  return _asymmetric_params(low, high, _ACTIVATION_HALF_RANGE)


def _asymmetric_params(low: float, high: float,
                       half_range: float) -> Tuple[np.float32, int]:
  low, high = min(float(low), 0.0), max(float(high), 0.0)
  if high - low <= _NEAR_ZERO_RANGE:
    low, high = min(low, -half_range), max(high, half_range)
  low32 = np.float32(low)
  scale = (np.float32(high) - low32) / np.float32(INT8_MAX - INT8_MIN)
  zero_point = round_half_away(np.float32(INT8_MIN) - low32 / scale)
  return scale, int(np.clip(zero_point, INT8_MIN, INT8_MAX))


def quantize_constant(values: np.ndarray
                      ) -> Tuple[np.ndarray, np.float32, int]:
  """(int8 values, scale, zero point) of a constant an elementwise op
  (MUL, ADD, SUB) consumes: asymmetric over its own range."""
  values = np.asarray(values, np.float32)
  scale, zero_point = _asymmetric_params(values.min(), values.max(),
                                         _CONSTANT_HALF_RANGE)
  quantized = round_half_away(values / np.float64(scale) + zero_point)
  return (np.clip(quantized, INT8_MIN, INT8_MAX).astype(np.int8), scale,
          zero_point)


def quantize_fully_connected(weights: np.ndarray, bias: np.ndarray,
                             input_scale: np.float32) -> QuantizedLayer:
  """Int8 weights [out, in] and int32 bias of `x @ weights.T + bias`."""
  weights = np.asarray(weights, np.float32)
  bias = np.asarray(bias, np.float32)
  max_abs = np.float32(np.max(np.abs(weights)))
  half_range = max(max_abs, np.float32(_CONSTANT_HALF_RANGE))
  weight_scale = np.float32(2 * half_range) / np.float32(2 * _WEIGHT_MAX)
  bias_scale = np.float32(np.float64(input_scale) * np.float64(weight_scale))
  bias_half_range = float(np.max(np.abs(bias)))
  if bias_half_range / float(bias_scale) >= _BIAS_MAX:
    adjusted = bias_half_range / _BIAS_MAX
    bias_scale = np.float32(adjusted)
    weight_scale = np.float32(adjusted / float(input_scale))
  legacy_scale = max_abs / np.float32(_WEIGHT_MAX)
  if max_abs and abs(float(legacy_scale) - float(weight_scale)) <= (
      _LEGACY_SCALE_TOLERANCE):
    quantized = round_half_away(weights * (np.float32(_WEIGHT_MAX) / max_abs))
  else:
    quantized = round_half_away(weights / np.float64(weight_scale))
  return QuantizedLayer(
      np.clip(quantized, -_WEIGHT_MAX, _WEIGHT_MAX).astype(np.int8),
      weight_scale, _quantize_bias(bias, bias_scale), bias_scale)


def _quantize_bias(bias: np.ndarray, bias_scale) -> np.ndarray:
  """round(bias * float32(1 / scale)) in float32, clipped to +-(2^31 - 1)."""
  inverse = (1.0 / np.asarray(bias_scale, np.float64)).astype(np.float32)
  int32_max = np.iinfo(np.int32).max
  return np.clip(round_half_away(bias * inverse), -int32_max,
                 int32_max).astype(np.int32)


def quantize_conv(weights: np.ndarray, bias: np.ndarray,
                  input_scale: np.float32) -> QuantizedLayer:
  """Int8 weights [out, h, w, in] and int32 bias of a convolution, both
  quantized per output channel."""
  weights = np.asarray(weights, np.float32)
  bias = np.asarray(bias, np.float32)
  max_abs = np.max(np.abs(weights.reshape(len(weights), -1)), axis=1)
  half_range = np.maximum(max_abs, np.float32(_CONSTANT_HALF_RANGE))
  weight_scale = (2 * half_range) / np.float32(2 * _WEIGHT_MAX)
  bias_scale = (np.float64(input_scale) *
                weight_scale.astype(np.float64)).astype(np.float32)
  # The converter compares in double, with the float32 scales.
  too_large = np.abs(bias) / bias_scale.astype(np.float64) > _BIAS_MAX
  adjusted = np.abs(bias).astype(np.float64) / _BIAS_MAX
  bias_scale = np.where(too_large, adjusted.astype(np.float32), bias_scale)
  weight_scale = np.where(
      too_large, (adjusted / np.float64(input_scale)).astype(np.float32),
      weight_scale)
  inverse = (1.0 / weight_scale.astype(np.float64)).astype(np.float32)
  broadcast = (-1,) + (1,) * (weights.ndim - 1)
  quantized = round_half_away(weights * inverse.reshape(broadcast))
  return QuantizedLayer(
      np.clip(quantized, -_WEIGHT_MAX, _WEIGHT_MAX).astype(np.int8),
      weight_scale, _quantize_bias(bias, bias_scale), bias_scale)

"""Turns a Sonnet/TF policy into a TFLite flatbuffer at a chosen precision.

ActorQ's actors explore with a quantized copy of the learner's fp32 policy.
Post-training quantization needs *representative* inputs to pick int8 ranges:
we take them from real observations (replay or env rollouts), never noise,
because activation ranges on noise are not the ranges the actor will see.
"""
import dataclasses
import time
from typing import Callable, Optional, Tuple

import numpy as np
import tensorflow as tf

from quarl.litert import InvalidModelError
from quarl.litert import ModelProbe
from quarl.quantization import float_ends

# `fp32` here is TFLite fp32; the stock-TF baseline (`fp32_tf`) never converts.
PRECISIONS = ('fp32', 'fp16', 'dynamic_int8', 'int8')
# Converted for fidelity studies (benchmarks/int8_fidelity.py), not offered
# to actors: every op int8 (what actors ran before float_ends.py), and int16
# activations with int8 weights (LiteRT aborts on LayerNorm torsos in this
# mode, and XNNPACK has no kernels for it).
STUDY_PRECISIONS = ('int8_all', 'int16x8')


class NonFiniteWeightsError(ValueError):
  """The policy holds NaN/Inf weights; publishing it would poison every actor."""


class UnloadableModelError(ValueError):
  """LiteRT refused, aborted on or hung on the converted model: never ship it.

  `model_bytes` holds the model, so it can be kept for a post-mortem.
  """

  def __init__(self, reason: str, model_bytes: bytes):
    super().__init__(reason)
    self.model_bytes = model_bytes


@dataclasses.dataclass(frozen=True)
class ConvertedModel:
  """One conversion's result and how faithful it is to the fp32 policy.

  Errors compare what the actor acts on (the model output after
  `postprocess`) on held observations. The relative ones divide by
  `output_scale` (the action range for continuous policies), so they read as
  a fraction of the range whatever the task; the max alone is dominated by
  near-bang-bang policies at their switching surface.
  """
  precision: str
  model_bytes: bytes
  # Wall seconds spent producing `model_bytes`.
  convert_s: float
  max_abs_err: float
  mean_rel_err: float
  p95_rel_err: float
  # Fraction of held observations whose argmax output differs from fp32; the
  # number that matters for greedy discrete (DQN) policies.
  argmax_mismatch: float
  # How the bytes were made: 'converted' (the TFLite converter) or 'patched'
  # (new weights written into an earlier conversion; see patcher.py).
  route: str


def check_finite(variables) -> None:
  """Raises NonFiniteWeightsError if any variable holds NaN/Inf."""
  for variable in variables:
    if not np.all(np.isfinite(variable.numpy())):
      raise NonFiniteWeightsError(
          f'refusing to convert: variable {variable.name!r} holds NaN/Inf')


def _make_converter(concrete_fn, module, precision: str,
                    representative_obs: np.ndarray, sparse: bool):
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      [concrete_fn], module)
  # Sparse encoding stores only the non-zero blocks of pruned (GST) layers.
  sparsity = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY] if sparse else []
  if precision == 'fp32':
    converter.optimizations = sparsity
    return converter
  # float_ends sparsifies int8 models itself, after quantizing.
  converter.optimizations = [tf.lite.Optimize.DEFAULT] + (
      [] if precision == 'int8' else sparsity)
  if precision == 'fp16':
    converter.target_spec.supported_types = [tf.float16]
  elif precision != 'dynamic_int8':
    # Integer: int8 ops with float at the ends (float_ends.py), every op
    # int8, or int16 activations beside int8 weights throughout. Float in
    # and out stays for the env interface.
    converter.representative_dataset = lambda: (
        [row[None, :]] for row in representative_obs)
    ops = tf.lite.OpsSet
    converter.target_spec.supported_ops = {
        'int8': [ops.TFLITE_BUILTINS_INT8, ops.TFLITE_BUILTINS],
        'int8_all': [ops.TFLITE_BUILTINS_INT8],
        'int16x8': [
            ops.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8],
    }[precision]
  return converter


_shared_probe: Optional[ModelProbe] = None


def _default_probe() -> ModelProbe:
  global _shared_probe
  if _shared_probe is None:
    _shared_probe = ModelProbe()
  return _shared_probe


def check_precision(precision: str) -> None:
  if precision not in PRECISIONS + STUDY_PRECISIONS:
    raise ValueError(
        f'unknown precision {precision!r}; choose from {", ".join(PRECISIONS)}')


def checked_inputs(precision: str, representative_obs: np.ndarray,
                   held_obs: Optional[np.ndarray]
                   ) -> Tuple[np.ndarray, np.ndarray]:
  """(representative, held) observations as float32, held defaulting to the
  representative ones; raises ValueError on an unknown precision or empty
  calibration data."""
  check_precision(precision)
  representative_obs = np.asarray(representative_obs, np.float32)
  if representative_obs.ndim != 2 or not len(representative_obs):
    raise ValueError('representative_obs must be a non-empty [N, obs] array')
  held_obs = representative_obs if held_obs is None else np.asarray(
      held_obs, np.float32)
  return representative_obs, held_obs


def convert_to_bytes(policy: Callable[[tf.Tensor], tf.Tensor], variables,
                     observation_size: int, precision: str,
                     representative_obs: np.ndarray, sparse: bool) -> bytes:
  """One full TFLite conversion of `policy` (batch-1 float32 obs)."""
  module = tf.Module()
  module.policy_variables = list(variables)
  module.serve = tf.function(
      policy,
      input_signature=[tf.TensorSpec([1, observation_size], tf.float32)])
  converter = _make_converter(module.serve.get_concrete_function(), module,
                              precision, representative_obs, sparse)
  if precision == 'int8':
    return float_ends.convert(converter, sparse)
  return converter.convert()


def prove_and_measure(policy: Callable[[tf.Tensor], tf.Tensor],
                      model_bytes: bytes, precision: str, convert_s: float,
                      route: str, held_obs: np.ndarray,
                      postprocess: Optional[Callable[[np.ndarray],
                                                     np.ndarray]],
                      output_scale, probe: Optional[ModelProbe]
                      ) -> ConvertedModel:
  """Runs the model in the probe's child (every model, however it was made:
  LiteRT aborts on some) and measures it against the fp32 `policy`.

  Raises:
    UnloadableModelError: the model does not load or run.
  """
  try:
    quantized = (probe or _default_probe()).run(model_bytes, held_obs)
  except InvalidModelError as error:
    raise UnloadableModelError(str(error), model_bytes) from error
  postprocess = postprocess or (lambda output: output)
  reference = postprocess(policy(tf.constant(held_obs)).numpy())
  quantized = postprocess(quantized)
  if output_scale is None:
    output_scale = max(float(np.ptp(reference)), 1e-6)
  abs_err = np.abs(quantized - reference)
  rel_err = abs_err / np.asarray(output_scale, np.float32)
  return ConvertedModel(
      precision=precision,
      model_bytes=model_bytes,
      convert_s=convert_s,
      max_abs_err=float(np.max(abs_err)),
      mean_rel_err=float(np.mean(rel_err)),
      p95_rel_err=float(np.percentile(rel_err, 95)),
      argmax_mismatch=float(np.mean(
          np.argmax(quantized, -1) != np.argmax(reference, -1))),
      route=route,
  )


def convert_policy(policy: Callable[[tf.Tensor], tf.Tensor],
                   variables,
                   observation_size: int,
                   precision: str,
                   representative_obs: np.ndarray,
                   held_obs: Optional[np.ndarray] = None,
                   sparse: bool = False,
                   postprocess: Optional[Callable[[np.ndarray],
                                                  np.ndarray]] = None,
                   output_scale=None,
                   probe: Optional[ModelProbe] = None) -> ConvertedModel:
  """Converts `policy` (batch-1 float32 obs -> float32 output) to TFLite.

  Args:
    policy: the deterministic fp32 policy (or Q-network) to export.
    variables: the variables `policy` reads; checked for NaN/Inf first.
    observation_size: length of the flat observation vector.
    precision: one of PRECISIONS.
    representative_obs: [N, observation_size] real observations for int8
      calibration (ignored by the other precisions).
    held_obs: observations NOT used for calibration, for the error report;
      defaults to `representative_obs`.
    sparse: store zero-heavy weights in TFLite's sparse format (smaller
      publishes of pruned policies; LiteRT then runs sparse int8 layers on
      its builtin kernels, as XNNPACK has none for them).
    postprocess: float step the actor applies to the model's output (the
      rescale to the action spec); errors are measured after it.
    output_scale: divisor of the relative errors (scalar or per output);
      None: the spread of the fp32 outputs on held observations.
    probe: where the model is first loaded and run (a child process, so a
      model that aborts LiteRT cannot take this process down).

  Raises:
    ValueError: unknown precision or empty calibration data.
    NonFiniteWeightsError: NaN/Inf in `variables`.
    UnloadableModelError: the converted model does not load or run.
  """
  representative_obs, held_obs = checked_inputs(precision, representative_obs,
                                                held_obs)
  check_finite(variables)
  start = time.perf_counter()
  model_bytes = convert_to_bytes(policy, variables, observation_size,
                                 precision, representative_obs, sparse)
  return prove_and_measure(policy, model_bytes, precision,
                           time.perf_counter() - start, 'converted', held_obs,
                           postprocess, output_scale, probe)

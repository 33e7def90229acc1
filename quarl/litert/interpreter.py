"""A TFLite flatbuffer run by LiteRT in this process (actors, evaluator).

LiteRT (ai-edge-litert) rather than TF's bundled interpreter: its XNNPACK int8
kernels are ~4x faster than fp32 on ActorQ-sized nets, while TF 2.8's bundled
interpreter runs int8 slower than fp32.
"""
import numpy as np
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.interpreter import OpResolverType


class InvalidModelError(ValueError):
  """Model bytes that LiteRT cannot load (corrupt, truncated, wrong shape)."""


def _allocated(model_bytes: bytes, num_threads: int,
               resolver: OpResolverType) -> Interpreter:
  interpreter = Interpreter(model_content=bytes(model_bytes),
                            num_threads=num_threads,
                            experimental_op_resolver_type=resolver)
  interpreter.allocate_tensors()
  return interpreter


def load_interpreter(model_bytes: bytes, num_threads: int = 1) -> Interpreter:
  """Builds and allocates a LiteRT interpreter, or raises InvalidModelError.

  XNNPACK first; models it cannot delegate (sparse int8 layers) fall back to
  LiteRT's builtin kernels rather than being rejected.
  """
  try:
    return _allocated(model_bytes, num_threads, OpResolverType.AUTO)
  except RuntimeError:
    pass  # Retried below without the default (XNNPACK) delegate.
  except ValueError as error:
    raise InvalidModelError(f'LiteRT cannot load model: {error}') from error
  try:
    return _allocated(model_bytes, num_threads,
                      OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
  except (ValueError, RuntimeError) as error:
    raise InvalidModelError(f'LiteRT cannot load model: {error}') from error


class LiteRTPolicy:
  """Batch-1 policy: flat float32 observation -> float32 output vector."""

  def __init__(self, model_bytes: bytes, num_threads: int = 1):
    self._interpreter = load_interpreter(model_bytes, num_threads)
    inputs = self._interpreter.get_input_details()
    outputs = self._interpreter.get_output_details()
    if len(inputs) != 1 or len(outputs) != 1:
      raise InvalidModelError(
          f'expected 1 input and 1 output, got {len(inputs)} and '
          f'{len(outputs)}')
    self._input_index = inputs[0]['index']
    self._output_index = outputs[0]['index']
    self.observation_size = int(inputs[0]['shape'][-1])
    self.output_size = int(outputs[0]['shape'][-1])

  def __call__(self, observation: np.ndarray) -> np.ndarray:
    batch = np.asarray(observation, np.float32).reshape(
        1, self.observation_size)
    self._interpreter.set_tensor(self._input_index, batch)
    self._interpreter.invoke()
    return self._interpreter.get_tensor(self._output_index)[0].copy()

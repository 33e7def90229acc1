"""Child side of ModelProbe: loads and runs models where an abort is harmless.

Reads requests from stdin and answers on stdout, one frame each way (see
`probe.py` for the framing). Imports only numpy and LiteRT, so it starts in
a fraction of a second and never drags TensorFlow into the child.
"""
import io
import sys

import numpy as np

from quarl.litert import framing
from quarl.litert.interpreter import InvalidModelError
from quarl.litert.interpreter import LiteRTPolicy


def answer(model_bytes: bytes, observations: np.ndarray) -> bytes:
  """Outputs of `model_bytes` on every observation row, as .npy bytes."""
  policy = LiteRTPolicy(model_bytes)
  if not observations.size:
    observations = np.zeros((1, policy.observation_size), np.float32)
  outputs = np.stack([policy(row) for row in observations])
  buffer = io.BytesIO()
  np.save(buffer, outputs, allow_pickle=False)
  return buffer.getvalue()


def main() -> None:
  requests, replies = sys.stdin.buffer, sys.stdout.buffer
  framing.write_frame(replies, framing.READY)
  while True:
    model_bytes = framing.read_frame(requests)
    if model_bytes is None:
      return  # The parent closed the pipe: it is done with us.
    observations = np.load(io.BytesIO(framing.read_frame(requests)),
                           allow_pickle=False)
    try:
      framing.write_frame(replies, framing.OK + answer(model_bytes,
                                                       observations))
    except InvalidModelError as error:
      framing.write_frame(replies, framing.ERROR + str(error).encode())


if __name__ == '__main__':
  main()

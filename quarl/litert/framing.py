"""Length-prefixed frames on a pipe, for ModelProbe and its child."""
import struct
from typing import BinaryIO, Optional

OK = b'+'
READY = b'ready'  # A new child's first frame: its imports are done.
ERROR = b'-'
_LENGTH = struct.Struct('<Q')


def write_frame(stream: BinaryIO, payload: bytes) -> None:
  stream.write(_LENGTH.pack(len(payload)) + payload)
  stream.flush()


def _read_exactly(stream: BinaryIO, size: int) -> Optional[bytes]:
  chunks, remaining = [], size
  while remaining:
    chunk = stream.read(remaining)
    if not chunk:
      return None
    chunks.append(chunk)
    remaining -= len(chunk)
  return b''.join(chunks)


def read_frame(stream: BinaryIO) -> Optional[bytes]:
  """The next payload, or None at end of stream."""
  header = _read_exactly(stream, _LENGTH.size)
  if header is None:
    return None
  return _read_exactly(stream, _LENGTH.unpack(header)[0])

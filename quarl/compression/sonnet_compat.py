"""Sonnet 2.0.0's convolutions on Python 3.10.

snt.Conv2D builds its kernel shape with `sonnet.src.utils.replicate`, which
tests `isinstance(x, collections.Sequence)`: an alias Python 3.10 removed, so
every Sonnet conv fails at its first call. The pinned stack keeps Sonnet
2.0.0 (Acme 0.4.0's), hence this one-line repair of that module's view of
`collections`, applied by the modules that build convs.
"""
import collections.abc

from sonnet.src import utils


def repair_conv() -> None:
  """Points sonnet.src.utils at collections.abc (idempotent)."""
  utils.collections = collections.abc

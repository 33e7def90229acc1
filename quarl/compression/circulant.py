"""Block-structured kernels: tie patterns, least-squares projection, expansion.

A tie pattern says which entries of each GxG group of a kernel share one stored
number. Block-circulant form with block size B is the pattern
`labels[i, j] = (j - i) mod B`, i.e. `W[i, j] = c[(j - i) mod B]`, B numbers
per BxB block instead of B². Other patterns (the block4-friendly B2 form in
`transforms.py`) reuse the same machinery, so there is one projection routine.

Shapes that are not multiples of G: the kernel is zero-padded up to the next
multiple and the padded entries are *excluded* from every average (each tied
number is the mean of the real entries it covers only). That is the exact
least-squares optimum over the real entries; a tied number with no real entry
is set to 0 (it never reaches the unpadded kernel). Storage is still counted
as K numbers per padded group (what a block format would store), so a layer
whose sides are not multiples of G compresses slightly less than 1 - K/G².
"""
import dataclasses
import math

import numpy as np
import tensorflow as tf

BLOCK_SIZES = (2, 4, 8)


@dataclasses.dataclass(frozen=True, eq=False)
class TiePattern:
  """`labels[i, j]` in 0..K-1: which stored number entry (i, j) uses."""
  labels: np.ndarray

  @property
  def size(self) -> int:
    return self.labels.shape[0]

  @property
  def num_tied(self) -> int:
    """K: numbers stored per group."""
    return int(self.labels.max()) + 1

  def one_hot(self) -> np.ndarray:
    """[G, G, K] selector so projection and expansion are single einsums."""
    return np.eye(self.num_tied)[self.labels]


def circulant_pattern(block_size: int) -> TiePattern:
  """The BxB circulant tie pattern W[i, j] = c[(j - i) mod B]."""
  check_block_size(block_size)
  i, j = np.indices((block_size, block_size))
  return TiePattern((j - i) % block_size)


def check_block_size(block_size: int) -> None:
  if block_size not in BLOCK_SIZES:
    raise ValueError(
        f'block size must be one of {BLOCK_SIZES}, got {block_size!r}')


def as_pattern(pattern_or_block) -> TiePattern:
  """Lets callers pass a plain block size B for the circulant pattern."""
  if isinstance(pattern_or_block, TiePattern):
    return pattern_or_block
  return circulant_pattern(pattern_or_block)


def grid_shape(shape, group: int):
  """(row, column) count of groups covering a padded kernel of `shape`."""
  return tuple(math.ceil(d / group) for d in shape)


def _as_float(kernel) -> tf.Tensor:
  """Keeps float32/float64 as given (tests use float64 for exactness)."""
  kernel = tf.convert_to_tensor(kernel)
  return kernel if kernel.dtype.is_floating else tf.cast(kernel, tf.float32)


def to_blocks(kernel, group: int) -> tf.Tensor:
  """[n, m] -> [R, C, G, G], zero-padding the bottom/right edge."""
  kernel = _as_float(kernel)
  n, m = kernel.shape
  rows, cols = grid_shape((n, m), group)
  padded = tf.pad(kernel, [[0, rows * group - n], [0, cols * group - m]])
  blocks = tf.reshape(padded, [rows, group, cols, group])
  return tf.transpose(blocks, [0, 2, 1, 3])


def from_blocks(blocks: tf.Tensor, shape) -> tf.Tensor:
  """Inverse of `to_blocks`: [R, C, G, G] -> [n, m], dropping the padding."""
  rows, cols, group, _ = blocks.shape
  dense = tf.reshape(tf.transpose(blocks, [0, 2, 1, 3]),
                     [rows * group, cols * group])
  return dense[:shape[0], :shape[1]]


def project(kernel, pattern) -> tf.Tensor:
  """Least-squares tied numbers [R, C, K]: the mean of each tie class."""
  pattern = as_pattern(pattern)
  kernel = _as_float(kernel)
  selector = tf.constant(pattern.one_hot(), kernel.dtype)
  sums = tf.einsum('rcij,ijk->rck', to_blocks(kernel, pattern.size), selector)
  counts = tf.einsum('rcij,ijk->rck',
                     to_blocks(tf.ones_like(kernel), pattern.size), selector)
  return tf.math.divide_no_nan(sums, counts)


def expand(coefficients, pattern, shape) -> tf.Tensor:
  """Exact dense kernel of `shape` from tied numbers [R, C, K]."""
  pattern = as_pattern(pattern)
  coefficients = _as_float(coefficients)
  selector = tf.constant(pattern.one_hot(), coefficients.dtype)
  blocks = tf.einsum('rck,ijk->rcij', coefficients, selector)
  return from_blocks(blocks, shape)


def project_dense(kernel, pattern) -> tf.Tensor:
  """Nearest (Frobenius) kernel with the pattern's ties, as a dense kernel."""
  kernel = _as_float(kernel)
  return expand(project(kernel, pattern), pattern, kernel.shape)


def stored_count(shape, pattern) -> int:
  """Numbers a block format stores for `shape`: K per padded group."""
  pattern = as_pattern(pattern)
  rows, cols = grid_shape(shape, pattern.size)
  return rows * cols * pattern.num_tied


def circulant_compression(block_size: int) -> float:
  """Nominal circulant CR: 1 - 1/B of the block entries are not stored."""
  check_block_size(block_size)
  return 1.0 - 1.0 / block_size

"""Binary pruning masks: BxB groups by L2 norm, or single weights by magnitude.

Accounting is over the real kernel entries only. Groups on the bottom/right
edge of a kernel whose sides are not multiples of B hold fewer real entries;
a group costs exactly the entries it holds. The mask never prunes more than
`floor(sparsity * n * m)` entries: groups are taken weakest first (ties by
position) until the next one would overshoot, so block-granular sparsity
lands within one group of the target. Already-pruned groups have norm 0, so
raising the target keeps them pruned and lowering it regrows the first of
them by position, still holding zeros.
"""
import numpy as np

from quarl.compression import circulant

GRANULARITIES = ('block', 'element')


def check_sparsity(sparsity: float, name: str = 'sparsity') -> None:
  if not 0.0 <= sparsity < 1.0:
    raise ValueError(f'{name} must be in [0, 1), got {sparsity!r}')


def _prune_budget(sparsity: float, total: int) -> int:
  # The epsilon absorbs float error such as 0.75 arriving as 0.7499999999.
  return int(np.floor(sparsity * total + 1e-6))


def block_norms(kernel: np.ndarray, block_size: int) -> np.ndarray:
  """[R, C] L2 norm of each (zero-padded) BxB group of `kernel`."""
  return np.sqrt(_block_sums(np.square(kernel), block_size))


def _block_sums(values: np.ndarray, block_size: int) -> np.ndarray:
  rows, cols = circulant.grid_shape(values.shape, block_size)
  padded = np.zeros((rows * block_size, cols * block_size), np.float64)
  padded[:values.shape[0], :values.shape[1]] = values
  return padded.reshape(rows, block_size, cols, block_size).sum(axis=(1, 3))


def group_mask(kernel: np.ndarray, sparsity: float,
               block_size: int) -> np.ndarray:
  """Mask zeroing the weakest BxB groups, at most `sparsity` of the entries."""
  kernel = np.asarray(kernel)
  sizes = _block_sums(np.ones(kernel.shape), block_size).ravel()
  order = np.argsort(block_norms(kernel, block_size).ravel(), kind='stable')
  covered = np.cumsum(sizes[order])
  keep = np.ones(sizes.shape, np.float32)
  keep[order[covered <= _prune_budget(sparsity, kernel.size)]] = 0.0
  rows, cols = circulant.grid_shape(kernel.shape, block_size)
  return expand_groups(keep.reshape(rows, cols), kernel.shape, block_size)


def expand_groups(grid: np.ndarray, shape, block_size: int) -> np.ndarray:
  """A per-group [R, C] mask as a mask over a kernel of `shape`."""
  full = np.repeat(np.repeat(grid, block_size, axis=0), block_size, axis=1)
  return full[:shape[0], :shape[1]].astype(np.float32)


def element_mask(kernel: np.ndarray, sparsity: float) -> np.ndarray:
  """Mask zeroing the `floor(sparsity * size)` smallest-magnitude weights."""
  kernel = np.asarray(kernel)
  order = np.argsort(np.abs(kernel).ravel(), kind='stable')
  mask = np.ones(kernel.size, np.float32)
  mask[order[:_prune_budget(sparsity, kernel.size)]] = 0.0
  return mask.reshape(kernel.shape)


def make_mask(kernel: np.ndarray, sparsity: float, block_size: int,
              granularity: str = 'block') -> np.ndarray:
  """Dispatches on granularity after validating the request."""
  check_sparsity(sparsity)
  if granularity == 'block':
    circulant.check_block_size(block_size)
    return group_mask(kernel, sparsity, block_size)
  if granularity == 'element':
    return element_mask(kernel, sparsity)
  raise ValueError(
      f'granularity must be one of {GRANULARITIES}, got {granularity!r}')


def sparsity_of(mask: np.ndarray) -> float:
  """Exact fraction of masked (zero) entries."""
  mask = np.asarray(mask)
  return float(1.0 - np.count_nonzero(mask) / mask.size)

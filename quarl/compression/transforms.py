"""Moving a kernel between block sizes, and measuring how far that moves it.

B4 -> B2 and B2 -> B4 are plain least-squares projections onto the target
block-circulant form. They are not inverse to each other: a general B2 kernel
is not B4-circulant, so B2 -> B4 -> B2 loses information.

The *block4-friendly* B2 form is the set of kernels that are block-circulant
for B=2 and B=4 at once (the intersection of the two subspaces). Inside a 4x4
group, B4 ties W[i, j] = c[(j - i) mod 4] and B2 additionally forces c1 = c3,
so the group is `c[d]` with d the cyclic distance min((j-i) mod 4, (i-j) mod 4):
three numbers per 4x4 group. Both projections leave such a kernel unchanged,
which is exactly what makes B2-friendly -> B4 -> B2 lossless. (It is also where
B4 -> B2 lands: projecting a B4 kernel onto B2 averages c1 and c3.)
"""
import numpy as np
import tensorflow as tf

from quarl.compression import circulant


def friendly_b2_pattern() -> circulant.TiePattern:
  """Tie pattern of the block4-friendly B2 form (3 numbers per 4x4 group)."""
  i, j = np.indices((4, 4))
  return circulant.TiePattern(np.minimum((j - i) % 4, (i - j) % 4))


def b4_to_b2(kernel) -> tf.Tensor:
  """Least-squares B=2 block-circulant kernel nearest to `kernel`."""
  return circulant.project_dense(kernel, 2)


def b2_to_b4(kernel) -> tf.Tensor:
  """Least-squares B=4 block-circulant kernel nearest to `kernel`."""
  return circulant.project_dense(kernel, 4)


def to_friendly_b2(kernel) -> tf.Tensor:
  """Least-squares block4-friendly B2 kernel nearest to `kernel`."""
  return circulant.project_dense(kernel, friendly_b2_pattern())


def weight_shift(before, after) -> float:
  """Relative Frobenius change ||after - before|| / ||before|| (0 if both 0)."""
  before = np.asarray(before, np.float64)
  change = np.linalg.norm(np.asarray(after, np.float64) - before)
  scale = np.linalg.norm(before)
  if scale == 0.0:
    return 0.0 if change == 0.0 else float('inf')
  return float(change / scale)

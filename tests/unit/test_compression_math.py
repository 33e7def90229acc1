"""Block-circulant maths, block-size transforms and masks, checked in numpy."""
import numpy as np
import pytest

from quarl.compression import circulant
from quarl.compression import masks
from quarl.compression import transforms

SHAPES = [(8, 8), (16, 8), (5, 7), (3, 3), (10, 6), (1, 9)]


def _random(shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape)


def _tie_basis(shape, pattern):
  """One column per (group, tied number): 1 on the real entries it covers."""
  g = pattern.size
  rows, cols = circulant.grid_shape(shape, g)
  columns = []
  for r in range(rows):
    for c in range(cols):
      for k in range(pattern.num_tied):
        column = np.zeros(shape)
        for i, j in zip(*np.nonzero(pattern.labels == k)):
          if r * g + i < shape[0] and c * g + j < shape[1]:
            column[r * g + i, c * g + j] = 1.0
        columns.append(column.ravel())
  return np.stack(columns, axis=1)


@pytest.mark.parametrize('block', [2, 4, 8])
def test_expand_is_exact_circulant(block):
  shape = (2 * block + 1, 3 * block)
  rows, cols = circulant.grid_shape(shape, block)
  coeffs = _random((rows, cols, block))
  dense = circulant.expand(coeffs, block, shape).numpy()
  assert dense.shape == shape
  for i in range(shape[0]):
    for j in range(shape[1]):
      k = (j % block - i % block) % block
      assert dense[i, j] == coeffs[i // block, j // block, k]


@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('block', [2, 4, 8])
def test_projection_is_least_squares_optimum_and_idempotent(shape, block):
  kernel = _random(shape)
  basis = _tie_basis(shape, circulant.circulant_pattern(block))
  solution = np.linalg.lstsq(basis, kernel.ravel(), rcond=None)[0]
  projected = circulant.project_dense(kernel, block).numpy()
  np.testing.assert_allclose(projected.ravel(), basis @ solution, atol=1e-12)
  again = circulant.project_dense(projected, block).numpy()
  np.testing.assert_allclose(again, projected, atol=1e-12)


def test_projection_of_multiple_shape_round_trips_coefficients():
  coeffs = _random((3, 2, 4))
  dense = circulant.expand(coeffs, 4, (12, 8))
  np.testing.assert_allclose(circulant.project(dense, 4).numpy(), coeffs,
                             atol=1e-12)


def test_stored_count_and_nominal_cr():
  assert circulant.stored_count((256, 256), 4) == 64 * 64 * 4
  assert circulant.stored_count((5, 7), 4) == 2 * 2 * 4  # padded groups
  assert [circulant.circulant_compression(b) for b in (2, 4, 8)] == [
      0.5, 0.75, 0.875]
  with pytest.raises(ValueError):
    circulant.circulant_pattern(3)


def test_friendly_b2_is_the_intersection_of_b2_and_b4():
  basis = _tie_basis((4, 4), transforms.friendly_b2_pattern())
  assert basis.shape[1] == 3  # c0, c2 and the shared c1 = c3
  for column in basis.T:
    group = column.reshape(4, 4)
    np.testing.assert_allclose(transforms.b4_to_b2(group).numpy(), group)
    np.testing.assert_allclose(transforms.b2_to_b4(group).numpy(), group)


@pytest.mark.parametrize('shape', [(16, 8), (6, 10)])
def test_block_size_transforms_and_weight_shift(shape):
  kernel = _random(shape, seed=1)
  b2 = transforms.b4_to_b2(kernel).numpy()
  b4 = transforms.b2_to_b4(kernel).numpy()
  for moved in (b2, b4):
    shift = transforms.weight_shift(kernel, moved)
    assert np.isfinite(shift) and 0.0 < shift < 1.0
  # Already structured: no shift.
  assert transforms.weight_shift(b4, transforms.b2_to_b4(b4).numpy()) < 1e-12
  assert transforms.weight_shift(b2, transforms.b4_to_b2(b2).numpy()) < 1e-12
  # A general B2 kernel does not survive B2 -> B4 -> B2 ...
  round_trip = transforms.b4_to_b2(transforms.b2_to_b4(b2)).numpy()
  assert transforms.weight_shift(b2, round_trip) > 1e-3
  # ... the block4-friendly B2 form does, exactly.
  friendly = transforms.to_friendly_b2(kernel).numpy()
  via_b4 = transforms.b2_to_b4(friendly).numpy()
  np.testing.assert_allclose(via_b4, friendly, atol=1e-12)
  np.testing.assert_allclose(transforms.b4_to_b2(via_b4).numpy(), friendly,
                             atol=1e-12)
  # B4 -> B2 lands in the friendly form, so going back to B4 is lossless.
  landed = transforms.b4_to_b2(b4).numpy()
  np.testing.assert_allclose(transforms.b2_to_b4(landed).numpy(), landed,
                             atol=1e-12)


def test_weight_shift_edge_cases():
  assert transforms.weight_shift(np.zeros(3), np.zeros(3)) == 0.0
  assert transforms.weight_shift(np.zeros(3), np.ones(3)) == float('inf')
  shift = transforms.weight_shift(np.ones(4), 2 * np.ones(4))
  assert shift == pytest.approx(1.0)


def test_group_mask_prunes_weakest_blocks():
  kernel = np.ones((8, 8))
  kernel[:4, :4] *= 0.1  # weakest block
  kernel[4:, :4] *= 0.2
  mask = masks.make_mask(kernel, 0.5, 4)
  expected = np.ones((8, 8))
  expected[:, :4] = 0.0
  np.testing.assert_array_equal(mask, expected)
  assert masks.sparsity_of(mask) == 0.5


@pytest.mark.parametrize('shape', [(10, 7), (5, 5), (64, 33)])
@pytest.mark.parametrize('sparsity', [0.0, 0.3, 0.75, 0.9])
def test_group_mask_accounting_at_non_multiple_shapes(shape, sparsity):
  kernel = _random(shape, seed=2)
  mask = masks.make_mask(kernel, sparsity, 4)
  achieved = masks.sparsity_of(mask)
  assert sparsity - 16 / kernel.size < achieved <= sparsity
  # Whole groups only: every 4x4 group is all kept or all pruned.
  for r in range(0, shape[0], 4):
    for c in range(0, shape[1], 4):
      assert len(np.unique(mask[r:r + 4, c:c + 4])) == 1


def test_element_mask_is_exact_and_by_magnitude():
  kernel = _random((7, 9), seed=3)
  mask = masks.make_mask(kernel, 0.5, 4, granularity='element')
  assert np.count_nonzero(mask == 0) == 31  # floor(0.5 * 63)
  assert np.abs(kernel[mask == 0]).max() <= np.abs(kernel[mask == 1]).min()


def test_mask_rejects_bad_requests():
  with pytest.raises(ValueError):
    masks.make_mask(np.ones((4, 4)), 1.0, 4)
  with pytest.raises(ValueError):
    masks.make_mask(np.ones((4, 4)), 0.5, 4, granularity='row')

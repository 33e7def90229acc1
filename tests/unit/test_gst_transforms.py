"""GST's block-size ladders (--compression.transform): the rung at the
S_shift point, the hand-over at the rung's CR, measured shifts, and CR that
never drops to S_shift * CR_circulant."""
import numpy as np
import pytest
import tensorflow as tf

from quarl.compression import circulant
from quarl.compression import controller
from quarl.compression import layers


def _controller(transform, s_shift=0.25):
  built = []
  for n, m in ((32, 32), (32, 16)):
    layer = layers.CompressibleLinear(m)
    layer(tf.zeros([1, n]))
    built.append(layer)
  return controller.make_controller('gst', built, block_size=4, s_shift=s_shift,
                                    s_final=0.9, begin_step=0, end_step=1000,
                                    update_every=1000, transform=transform)


def _train_a_little(ctl, rng):
  """Stands in for optimizer steps: arbitrary updates, then the constraint."""
  for layer in ctl.layers:
    layer.w.assign_add(rng.normal(0, 0.1, layer.w.shape).astype(np.float32))
  ctl.constrain()


def _crs_over_training(ctl):
  rng = np.random.default_rng(0)
  crs = []
  for step in range(0, 1001, 10):
    _train_a_little(ctl, rng)
    ctl.sync(step)
    crs.append(ctl.report()['compressed_cr'])
  return crs


@pytest.mark.parametrize('transform, start, rung, group, floor', [
    ('projection', (4, False), (2, False), 2, 0.5),
    ('b4_friendly_b2', (4, False), (2, True), 4, 0.75),
    ('b4_friendly_b4', (2, True), (4, False), 4, 0.75),
])
def test_ladder_rungs_and_hand_over(transform, start, rung, group, floor):
  ctl = _controller(transform)
  for layer in ctl.layers:
    assert (layer.block_size, layer.friendly) == start
    assert layer.phase == layers.CIRCULANT
  schedule = ctl.clock.schedule
  start_cr = ctl.layers[0].pattern_cr
  step_down = next(t for t in range(1001) if schedule(t) >= 0.25 * start_cr)
  ctl.sync(step_down)
  for layer in ctl.layers:
    assert (layer.block_size, layer.friendly) == rung
    assert layer.phase == layers.CIRCULANT
  assert ctl.report()['transforms'] == len(ctl.layers)
  rung_cr = ctl.layers[0].pattern_cr
  hand_over = next(t for t in range(1001) if schedule(t) >= rung_cr)
  ctl.sync(hand_over - 1)
  assert ctl.layers[0].phase == layers.CIRCULANT
  ctl.sync(hand_over)
  for layer in ctl.layers:
    assert layer.phase == layers.SPARSE and layer.block_size == group
    mask = layer.mask.numpy().reshape(layer.w.shape[0] // group, group,
                                      layer.w.shape[1] // group, group)
    # Whole groups pruned: every group all ones or all zeros.
    per_group = mask.sum(axis=(1, 3))
    assert set(np.unique(per_group)) <= {0, group * group}
  # CR never falls below the rung's floor after the start.
  assert min(_crs_over_training(_controller(transform))) >= floor - 1e-6


def test_without_a_transform_s_shift_drops_cr_at_the_hand_over():
  """The drop the ladders exist to avoid (S_shift 0.25: 0.75 -> ~0.19)."""
  crs = _crs_over_training(_controller('none'))
  assert crs[0] == 0.75 and min(crs) < 0.25


def test_transform_shifts_are_measured():
  # projection from a trained B4 kernel moves weights (c1, c3 averaged);
  # b4_friendly_b4's move from the friendly form to B4 moves nothing.
  rng = np.random.default_rng(1)
  projection, friendly = _controller('projection'), _controller(
      'b4_friendly_b4')
  for ctl in (projection, friendly):
    _train_a_little(ctl, rng)
    ctl.sync(1000)
  assert projection.report()['last_transform_shift'] > 0.05
  assert friendly.report()['last_transform_shift'] < 1e-6


def test_friendly_rung_re_projects_losslessly_to_b4():
  ctl = _controller('b4_friendly_b2')
  ctl.sync(400)  # Past the S_shift point, before the hand-over.
  kernel = ctl.layers[0].w.numpy()
  np.testing.assert_allclose(circulant.project_dense(kernel, 4), kernel,
                             atol=1e-6)


@pytest.mark.parametrize('knobs, message', [
    (dict(transform='shrink'), 'GST transform must be one of'),
    (dict(transform='projection', block_size=2), 'needs block size 4'),
])
def test_bad_transform_knobs(knobs, message):
  with pytest.raises(ValueError, match=message):
    controller.make_controller('gst', [], **knobs)

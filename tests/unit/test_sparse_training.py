"""Sparse training from scratch: ERK densities, static masks, RigL moves."""
import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from quarl.compression import controller
from quarl.compression import layers
from quarl.compression import schedules
from quarl.compression import sparse_training


def _mlp(sizes=(12, 32, 32, 32, 3)):
  tf.random.set_seed(0)
  mlp = layers.make_compressible_mlp(sizes)
  mlp(tf.zeros([1, 6]))
  return mlp


def _active(ctl):
  return [int(np.count_nonzero(layer.mask.numpy())) for layer in ctl.layers]


def test_erk_densities_meet_the_budget_and_scale_with_fan():
  shapes = [(256, 256), (64, 256), (4, 512)]
  densities = sparse_training.erk_densities(shapes, 0.9)
  sizes = [n * m for n, m in shapes]
  assert np.dot(densities, sizes) / sum(sizes) == pytest.approx(0.1)
  # (n + m) / (n m): the narrow layers get denser, the thin one is capped.
  assert densities[2] == 1.0
  assert densities[0] < densities[1] < 1.0
  assert densities[1] / densities[0] == pytest.approx(
      (320 / (64 * 256)) / (512 / 256**2))
  assert sparse_training.erk_densities([(8, 8), (8, 8)], 0.75) == [
      pytest.approx(0.25)] * 2


@pytest.mark.parametrize('kind', ['static', 'rigl'])
@pytest.mark.parametrize('granularity', ['element', 'block'])
def test_masks_hold_through_optimizer_steps(kind, granularity):
  mlp = _mlp()
  ctl = controller.make_controller(
      kind, mlp.compressible_layers, s_final=0.8, block_size=4,
      granularity=granularity, update_every=10, topology_every=1000,
      end_step=10_000)
  masks = [layer.mask.numpy().copy() for layer in ctl.layers]
  assert ctl.report()['compressed_cr'] == pytest.approx(0.8, abs=0.02)
  optimizer = snt.optimizers.Adam(1e-2)
  variables = mlp.trainable_variables

  @tf.function
  def step(inputs):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(tf.square(mlp(inputs) - 1.0))
    gradients = tape.gradient(loss, variables)
    ctl.record_gradients(gradients, variables)
    optimizer.apply(gradients, variables)
    ctl.constrain()

  for t in range(1, 21):
    step(tf.random.normal([8, 6]))
    ctl.sync(t)
  for layer, mask in zip(ctl.layers, masks):
    np.testing.assert_array_equal(layer.mask.numpy(), mask)
    assert not np.any(layer.w.numpy()[mask == 0])
    if granularity == 'block':  # Whole 4x4 groups, on or off.
      rows, cols = mask.shape
      groups = mask.reshape(rows // 4, 4, cols // 4, 4).sum(axis=(1, 3))
      assert set(np.unique(groups)) <= {0.0, 16.0}
  # The report counts what the masks keep, layer by layer.
  report = ctl.report()
  layer_crs = [value for key, value in report.items() if key.startswith('cr/')]
  assert layer_crs == [pytest.approx(1 - mask.mean()) for mask in masks]
  assert report['average_cr'] == pytest.approx(report['compressed_cr'])


@pytest.mark.parametrize('granularity', ['element', 'block'])
def test_rigl_moves_masks_keeping_the_count_and_regrows_at_zero(granularity):
  mlp = _mlp()
  ctl = controller.make_controller(
      'rigl', mlp.compressible_layers, s_final=0.75, block_size=4,
      granularity=granularity, update_every=10, topology_every=20,
      drop_fraction=0.5, end_step=100)
  layer = ctl.layers[0]
  before_mask = layer.mask.numpy().copy()
  before_active = _active(ctl)
  # The dense gradient is largest where the mask is off: RigL regrows there.
  gradient = np.where(before_mask == 0, 1.0 + np.arange(before_mask.size)
                      .reshape(before_mask.shape) % 7, 0.0).astype(np.float32)
  ctl.record_gradients([tf.constant(gradient)], [layer.w])
  ctl.sync(10)  # Not a topology step yet.
  np.testing.assert_array_equal(layer.mask.numpy(), before_mask)
  ctl.sync(20)
  after = layer.mask.numpy()
  assert _active(ctl) == before_active
  grown = (after == 1) & (before_mask == 0)
  assert grown.any() and not np.any(layer.w.numpy()[grown])
  assert int(np.count_nonzero(after != before_mask)) == 2 * int(grown.sum())
  assert ctl.report()['mask_updates'] == 1
  # Past end_step the topology stays.
  for step in range(30, 160, 10):
    ctl.sync(step)
  assert ctl.report()['mask_updates'] == 4  # Steps 20, 40, 60, 80.
  assert _active(ctl) == before_active


def test_rigl_drops_the_weakest_and_grows_the_strongest_gradient():
  layer = layers.CompressibleLinear(4)
  layer(tf.zeros([1, 4]))
  ctl = controller.make_controller(
      'rigl', [layer], s_final=0.5, block_size=2, granularity='element',
      update_every=10, topology_every=10, drop_fraction=0.3, end_step=1000)
  mask = np.array([[1, 1, 0, 0]] * 4, np.float32)
  weights = np.array([[4, 3, 0, 0], [2, 0.1, 0, 0], [5, 6, 0, 0],
                      [7, 8, 0, 0]], np.float32)
  layer.set_kernel_matrix(weights)
  layer.set_mask(mask)
  gradient = np.full((4, 4), 0.5, np.float32)
  gradient[3, 2] = 9.0
  gradient[1, 1] = 100.0  # Dropped and regrown at once: keeps its weight.
  ctl.record_gradients([tf.constant(gradient)], [layer.w])
  # 8 active, 0.3 x (1 + cos(pi / 100)) / 2 of them: two drop, (1, 1) and
  # (1, 0); two grow, (1, 1) and (3, 2).
  ctl.sync(10)
  expected = mask.copy()
  expected[1, 0], expected[3, 2] = 0, 1
  np.testing.assert_array_equal(layer.mask.numpy(), expected)
  kept = weights.copy()
  kept[1, 0] = 0
  np.testing.assert_allclose(layer.w.numpy(), kept)  # (3, 2) grew at 0.
  assert ctl.report()['last_moved'] == 1


def test_cosine_drop_fraction():
  assert schedules.cosine_drop_fraction(0, 0.5, 100) == pytest.approx(0.5)
  assert schedules.cosine_drop_fraction(50, 0.5, 100) == pytest.approx(0.25)
  assert schedules.cosine_drop_fraction(100, 0.5, 100) == 0.0
  assert schedules.cosine_drop_fraction(500, 0.5, 100) == 0.0


def test_rigl_masks_and_gradients_survive_a_checkpoint(tmp_path):
  mlp = _mlp()
  ctl = controller.make_controller(
      'rigl', mlp.compressible_layers, s_final=0.75, update_every=10,
      topology_every=20, end_step=100)
  ctl.sync(20)
  path = tf.train.Checkpoint(c=ctl, m=mlp).save(str(tmp_path / 'ckpt'))
  saved = [layer.mask.numpy().copy() for layer in ctl.layers]
  fresh_mlp = _mlp()
  tf.random.set_seed(7)  # Another random start, overwritten by the restore.
  fresh = controller.make_controller(
      'rigl', fresh_mlp.compressible_layers, s_final=0.75, update_every=10,
      topology_every=20, end_step=100)
  tf.train.Checkpoint(c=fresh, m=fresh_mlp).restore(
      path).assert_existing_objects_matched()
  for layer, mask in zip(fresh.layers, saved):
    np.testing.assert_array_equal(layer.mask.numpy(), mask)
  assert fresh.report()['mask_updates'] == 1

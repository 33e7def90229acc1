"""CompressibleConv2D and the Nature CNN torso: the dense layers' checks on
conv kernels (least squares per tap, CR, masks through Adam, controllers)."""
import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from quarl.compression import controller
from quarl.compression import layers
from quarl.compression import nature_cnn


def _conv(shape, seed=0, **kwargs):
  """A built CompressibleConv2D with kernel `shape` [kh, kw, in, out]."""
  kh, kw, inputs, outputs = shape
  layer = layers.CompressibleConv2D(
      outputs, (kh, kw), w_init=snt.initializers.RandomNormal(seed=seed),
      **kwargs)
  layer(tf.zeros([1, 6, 6, inputs]))
  return layer


def _tie_basis(shape, block):
  """One column per (tap, channel group, tied number) of a conv kernel: the
  circulant pattern W[i, j] = c[(j - i) mod B] on each tap's [in, out]."""
  kh, kw, inputs, outputs = shape
  index = {}
  rows, columns = [], []
  for entry, (h, w, i, j) in enumerate(np.ndindex(*shape)):
    key = (h, w, i // block, j // block, (j - i) % block)
    rows.append(entry)
    columns.append(index.setdefault(key, len(index)))
  basis = np.zeros((int(np.prod(shape)), len(index)))
  basis[rows, columns] = 1.0
  return basis


def test_dense_conv_matches_snt_conv2d():
  kernel = np.random.default_rng(3).normal(size=(3, 3, 4, 8))
  init = lambda shape, dtype: tf.constant(kernel, dtype)
  ours = layers.CompressibleConv2D(8, 3, stride=2, w_init=init,
                                   b_init=tf.ones)
  theirs = snt.Conv2D(8, 3, stride=2, w_init=init, b_init=tf.ones)
  x = tf.random.normal([2, 9, 9, 4], seed=1)
  np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-5)
  assert {v.name.split('/')[-1] for v in ours.trainable_variables} == {
      'w:0', 'b:0'}
  assert ours.phase == layers.DENSE and ours.compression_ratio() == 0.0
  with pytest.raises(ValueError, match='multiples of 8'):
    layers.CompressibleConv2D(12, 3)


@pytest.mark.parametrize('shape', [(2, 3, 5, 8), (1, 2, 8, 16)])
@pytest.mark.parametrize('block', [2, 4, 8])
def test_projection_is_per_tap_least_squares(shape, block):
  layer = _conv(shape, seed=block)
  kernel = layer.w.numpy().astype(np.float64)
  basis = _tie_basis(shape, block)
  solution = np.linalg.lstsq(basis, kernel.ravel(), rcond=None)[0]
  assert layer.to_circulant(block) > 0.0
  np.testing.assert_allclose(layer.w.numpy().ravel(), basis @ solution,
                             atol=1e-5)
  projected = layer.w.numpy()
  assert layer.set_block_size(block) < 1e-6  # Idempotent.
  np.testing.assert_allclose(layer.w.numpy(), projected, atol=1e-6)


def test_phase_requested_before_build_is_applied_at_build():
  layer = layers.CompressibleConv2D(8, 2)
  layer.to_circulant(2)
  layer(tf.zeros([1, 4, 4, 8]))
  basis = _tie_basis(layer.w.shape, 2)
  w = layer.w.numpy().ravel()
  fit = basis @ np.linalg.lstsq(basis, w, rcond=None)[0]
  np.testing.assert_allclose(w, fit, atol=1e-6)


def test_cr_accounting_counts_every_tap():
  layer = _conv((3, 3, 6, 8))  # in=6: each tap has 2 x 2 padded 4x4 groups
  assert layer.num_params() == 432 and layer.stored_params() == 432
  layer.to_circulant(4)
  assert layer.stored_params() == 9 * 2 * 2 * 4
  assert layer.compression_ratio() == pytest.approx(1 - 144 / 432)
  layer.set_block_size(8)
  assert layer.stored_params() == 9 * 1 * 1 * 8
  layer.set_block_size(2, friendly=True)
  assert layer.stored_params() == 9 * 2 * 2 * 3
  layer.to_sparse(0.5)
  assert layer.phase == layers.SPARSE
  assert 216 - 16 < 432 - layer.stored_params() <= 216  # Within one group.
  assert layer.compression_ratio() == pytest.approx(
      1 - np.count_nonzero(layer.mask.numpy()) / 432)


def test_groups_are_channel_blocks_of_one_tap_ranked_over_all_taps():
  layer = _conv((3, 3, 8, 16), seed=1)
  weak_tap = layer.w.numpy()
  weak_tap[1, 2] *= 1e-3
  layer.w.assign(weak_tap)
  layer.to_sparse(1 / 9)  # Exactly the groups of one tap.
  mask = layer.mask.numpy()
  assert not mask[1, 2].any() and np.count_nonzero(mask == 0) == 128
  layer.to_sparse(0.5)
  mask = layer.mask.numpy()
  groups = mask.reshape(3, 3, 2, 4, 4, 4)  # [kh, kw, in/4, 4, out/4, 4]
  assert np.all(groups == groups[:, :, :, :1, :, :1])  # Constant per group.


@pytest.mark.parametrize('kind,knobs', [
    ('prune', dict(s_final=0.5, begin_step=0, end_step=2, update_every=1)),
    ('prune', dict(s_final=0.5, begin_step=0, end_step=2, update_every=1,
                   granularity='element')),
    ('gst', dict(block_size=2, s_shift=0.5, s_final=0.6, begin_step=0,
                 end_step=2)),
])
def test_masks_hold_through_real_adam_steps(kind, knobs):
  conv = layers.CompressibleConv2D(16, 3, padding='VALID')
  head = snt.Linear(3)
  x = tf.random.normal([16, 5, 5, 8], seed=0)
  y = tf.random.normal([16, 3], seed=1)

  def model(inputs):
    return head(snt.Flatten()(tf.nn.relu(conv(inputs))))

  model(x)
  variables = conv.trainable_variables + head.trainable_variables
  ctl = controller.make_controller(kind, [conv], **knobs)
  optimizer = snt.optimizers.Adam(1e-2)

  @tf.function(jit_compile=True)  # As learners compile their step.
  def train_step():
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(tf.square(model(x) - y))
    optimizer.apply(tape.gradient(loss, variables), variables)
    ctl.constrain()

  ctl.after_optimizer_step(1)
  pruned = conv.mask.numpy() == 0
  assert conv.phase == layers.SPARSE and pruned.any()
  before = conv.w.numpy()
  for step in range(2, 7):
    train_step()
    ctl.sync(step)
    assert np.all(conv.w.numpy()[pruned] == 0.0)
  assert not np.allclose(conv.w.numpy()[~pruned], before[~pruned])


def test_iterative_pruning_block_masks_follow_channel_blocks():
  layer = _conv((2, 2, 8, 8), seed=2)
  ctl = controller.make_controller('prune', [layer], s_final=0.5, begin_step=0,
                                   end_step=1, block_size=4, update_every=1)
  ctl.after_optimizer_step(1)
  groups = layer.mask.numpy().reshape(2, 2, 2, 4, 2, 4)
  assert np.all(groups == groups[:, :, :, :1, :, :1])
  assert layer.compression_ratio() == 0.5


def _torso_step(torso, head, optimizer, frames):
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.square(head(torso(frames))))
  variables = torso.trainable_variables + head.trainable_variables
  optimizer.apply(tape.gradient(loss, variables), variables)


def test_gst_drives_the_nature_cnn_from_circulant_to_sparse():
  torso = nature_cnn.NatureCNNTorso(observation_shape=(36, 36, 4))
  head = snt.Linear(4)  # Output head: dense.
  frames = tf.random.uniform([4, 36, 36, 4], 0, 256, tf.int32)
  head(torso(frames))
  assert [type(l) for l in torso.layers] == [
      snt.Conv2D, layers.CompressibleConv2D, layers.CompressibleConv2D,
      layers.CompressibleLinear]
  compressible = torso.compressible_layers
  assert compressible == list(torso.layers[1:])
  dense = layers.dense_param_count([torso, head], compressible)
  assert dense == (8 * 8 * 4 * 32 + 32) + 64 + 64 + 512 + (512 * 4 + 4)
  ctl = controller.make_controller('gst', compressible, block_size=2,
                                   s_shift=1.0, s_final=0.8, begin_step=0,
                                   end_step=10, update_every=1,
                                   dense_params=dense)
  optimizer = snt.optimizers.Adam(1e-3)
  phases = []
  for step in range(1, 11):
    _torso_step(torso, head, optimizer, frames)
    ctl.after_optimizer_step(step)
    report = ctl.report()
    phases.append(report['phase'])
    if report['phase'] == layers.CIRCULANT:
      for layer in compressible:
        w = layer.w.numpy()
        assert layer.set_block_size(2) < 1e-6  # Already B=2 circulant.
        np.testing.assert_allclose(layer.w.numpy(), w, atol=1e-6)
  assert phases[0] == layers.CIRCULANT and phases[-1] == layers.SPARSE
  assert report['compressed_cr'] == pytest.approx(0.8, abs=0.01)
  assert report['cr/nature_cnn_torso/conv_1'] == pytest.approx(0.8, abs=0.01)
  assert 0.5 < report['average_cr'] < 0.8


def test_torso_reads_frames_or_flat_float_pixels():
  torso = nature_cnn.NatureCNNTorso(observation_shape=(36, 36, 4))
  frames = np.random.default_rng(0).integers(0, 256, (2, 36, 36, 4),
                                             dtype=np.uint8)
  features = torso(frames)
  assert features.shape == (2, 512) and np.all(features.numpy() >= 0)
  flat = frames.reshape(2, -1).astype(np.float32)
  np.testing.assert_allclose(torso(flat), features, rtol=1e-5, atol=1e-6)


def test_checkpoint_round_trips_conv_compression_state(tmp_path):
  layer = _conv((3, 3, 8, 8))
  layer.to_sparse(0.5)
  saved_w, saved_mask = layer.w.numpy(), layer.mask.numpy()
  path = tf.train.Checkpoint(layer=layer).save(str(tmp_path / 'ckpt'))
  fresh = _conv((3, 3, 8, 8), seed=5)
  tf.train.Checkpoint(layer=fresh).restore(path).assert_consumed()
  assert fresh.phase == layers.SPARSE
  np.testing.assert_array_equal(fresh.mask.numpy(), saved_mask)
  np.testing.assert_array_equal(fresh.w.numpy(), saved_w)

"""CompressibleLinear: drop-in snt.Linear, phases, CR, real optimizer steps."""
import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from quarl.compression import circulant
from quarl.compression import controller
from quarl.compression import layers
from quarl.compression import transforms


def _built(shape, seed=0, **kwargs):
  layer = layers.CompressibleLinear(
      shape[1], w_init=snt.initializers.RandomNormal(seed=seed), **kwargs)
  layer(tf.zeros([1, shape[0]]))
  return layer


def test_dense_layer_matches_snt_linear():
  kernel = np.random.default_rng(3).normal(size=(6, 5)).astype(np.float32)
  init = lambda shape, dtype: tf.constant(kernel, dtype)
  ours = layers.CompressibleLinear(5, w_init=init, b_init=tf.ones)
  theirs = snt.Linear(5, w_init=init, b_init=tf.ones)
  x = tf.random.normal([4, 6], seed=1)
  np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6)
  assert ours.w.trainable and ours.b.trainable
  assert {v.name.split('/')[-1] for v in ours.trainable_variables} == {
      'w:0', 'b:0'}
  assert ours.phase == layers.DENSE and ours.compression_ratio() == 0.0


def test_phase_requested_before_build_is_applied_at_build():
  layer = layers.CompressibleLinear(8)
  layer.to_circulant(4)
  layer(tf.zeros([1, 8]))
  w = layer.w.numpy()
  np.testing.assert_allclose(circulant.project_dense(w, 4).numpy(), w,
                             atol=1e-6)
  with pytest.raises(ValueError, match='no kernel'):
    layers.CompressibleLinear(3).to_sparse(0.5)


def test_cr_accounting_on_hand_built_layers():
  layer = _built((8, 8))
  assert layer.num_params() == 64 and layer.stored_params() == 64
  assert layer.to_circulant(4) > 0.0
  assert layer.stored_params() == 16 and layer.compression_ratio() == 0.75
  layer.set_block_size(8)
  assert layer.stored_params() == 8 and layer.compression_ratio() == 0.875
  layer.set_block_size(2, friendly=True)  # 3 numbers per 4x4 group
  assert layer.friendly and layer.block_size == 2
  assert layer.stored_params() == 12
  assert layer.compression_ratio() == 1 - 12 / 64
  layer.to_sparse(0.5)
  assert layer.phase == layers.SPARSE and layer.block_size == 2
  assert layer.stored_params() == 32 and layer.compression_ratio() == 0.5
  odd = _built((6, 6))
  odd.to_circulant(4)
  assert odd.stored_params() == 16  # 4 padded groups x 4 numbers
  assert odd.compression_ratio() == pytest.approx(1 - 16 / 36)
  with pytest.raises(ValueError):
    odd.set_block_size(4, friendly=True)


def test_block_size_change_reports_weight_shift():
  layer = _built((16, 16), seed=1)
  layer.to_circulant(4)
  assert layer.set_block_size(2, friendly=True) > 0.0
  friendly = layer.w.numpy()
  # Friendly B2 -> B4 -> friendly B2 moves nothing.
  assert layer.set_block_size(4) < 1e-6
  assert layer.set_block_size(2, friendly=True) < 1e-6
  np.testing.assert_allclose(layer.w.numpy(), friendly, atol=1e-6)
  assert transforms.weight_shift(friendly, layer.w.numpy()) < 1e-6


@pytest.mark.parametrize('kind,knobs', [
    ('prune', dict(s_final=0.5, begin_step=0, end_step=2, update_every=1)),
    ('gst', dict(block_size=2, s_shift=0.5, s_final=0.6, begin_step=0,
                 end_step=2)),
])
def test_structure_survives_real_adam_steps(kind, knobs):
  mlp = layers.make_compressible_mlp([16, 16, 16, 3], dense_first=True)
  x = tf.random.normal([32, 4], seed=0)
  y = tf.random.normal([32, 3], seed=1)
  mlp(x)
  ctl = controller.make_controller(kind, mlp.compressible_layers, **knobs)
  optimizer = snt.optimizers.Adam(1e-2)

  @tf.function
  def train_step():
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(tf.square(mlp(x) - y))
    grads = tape.gradient(loss, mlp.trainable_variables)
    optimizer.apply(grads, mlp.trainable_variables)

  ctl.after_optimizer_step(1)  # hand-over / first mask
  hidden = mlp.compressible_layers[0]
  pruned = hidden.mask.numpy() == 0
  assert hidden.phase == layers.SPARSE and pruned.any()
  before = hidden.w.numpy()
  for step in range(2, 7):
    train_step()
    ctl.after_optimizer_step(step)
    assert np.all(hidden.w.numpy()[pruned] == 0.0)
  assert not np.allclose(hidden.w.numpy()[~pruned], before[~pruned])


def test_circulant_survives_real_adam_steps():
  mlp = layers.make_compressible_mlp([16, 16, 16, 3])
  x = tf.random.normal([8, 4], seed=0)
  mlp(x)
  ctl = controller.make_controller('gst', mlp.compressible_layers, block_size=4)
  optimizer = snt.optimizers.Adam(1e-2)
  for step in range(1, 4):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(tf.square(mlp(x)))
    optimizer.apply(tape.gradient(loss, mlp.trainable_variables),
                    mlp.trainable_variables)
    ctl.after_optimizer_step(step)
    w = mlp.compressible_layers[0].w.numpy()
    np.testing.assert_allclose(circulant.project_dense(w, 4).numpy(), w,
                               atol=1e-6)


def test_mlp_keeps_first_and_last_dense():
  mlp = layers.make_compressible_mlp([16, 16, 16, 2], activate_final=True,
                                     name='critic')
  out = mlp(tf.ones([3, 5]))
  assert out.shape == (3, 2) and np.all(out.numpy() >= 0)
  kinds = [type(l) for l in mlp.layers]
  assert kinds == [snt.Linear, layers.CompressibleLinear,
                   layers.CompressibleLinear, snt.Linear]
  assert [l.name_scope.name for l in mlp.compressible_layers] == [
      'critic/linear_1/', 'critic/linear_2/']
  assert layers.dense_param_count([mlp], mlp.compressible_layers) == (
      5 * 16 + 16 + 16 + 16 + 16 * 2 + 2)
  open_end = layers.make_compressible_mlp([16, 16], dense_last=False)
  assert len(open_end.compressible_layers) == 1

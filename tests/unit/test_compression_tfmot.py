"""The iterative-pruning baseline is TF Model Optimization's pruning.

Its schedule, pruning steps and masks are checked step for step against a
`tfmot.sparsity.keras.prune_low_magnitude` Keras Dense fed the same weights,
and GST's cubic ramp against TFMOT's PolynomialDecay.
"""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_model_optimization as tfmot

from quarl.compression.config import CompressionConfig
from quarl.compression import controller
from quarl.compression import layers
from quarl.compression import schedules

BEGIN, END, EVERY = 20, 255, 10  # (END - BEGIN) % EVERY != 0, as TFMOT allows.


def _layer(n, m):
  layer = layers.CompressibleLinear(m, with_bias=False)
  layer(tf.zeros([1, n]))
  return layer


@pytest.mark.parametrize('shape,block,granularity', [
    ((16, 16), 2, 'block'),
    ((16, 16), 4, 'block'),
    ((18, 10), 4, 'block'),  # Edge groups: TFMOT pools them 'SAME'.
    ((12, 8), 4, 'element'),
])
def test_pruning_matches_tfmot_step_for_step(shape, block, granularity):
  schedule = tfmot.sparsity.keras.PolynomialDecay(
      0.1, 0.85, BEGIN, END, power=3, frequency=EVERY)
  wrapper = tfmot.sparsity.keras.prune_low_magnitude(
      tf.keras.layers.Dense(shape[1], use_bias=False),
      pruning_schedule=schedule, block_pooling_type='AVG',
      block_size=(block, block) if granularity == 'block' else (1, 1))
  wrapper.build((None, shape[0]))
  wrapper.pruning_step.assign(0)  # What UpdatePruningStep does at train start.
  tfmot_kernel, tfmot_mask, _ = wrapper.pruning_vars[0]
  layer = _layer(*shape)
  ctl = controller.make_controller('prune', [layer], s_init=0.1, s_final=0.85,
                                   begin_step=BEGIN, end_step=END,
                                   block_size=block, granularity=granularity,
                                   update_every=EVERY)
  rng = np.random.default_rng(0)
  weights = rng.normal(size=shape).astype(np.float32)
  last_pruning_step, sparsities = None, set()
  for batch in range(1, 301):
    tfmot_kernel.assign(weights)
    layer.w.assign(weights)
    # TFMOT: step = batch; masks update if it is a pruning step; w *= mask.
    wrapper(tf.zeros([1, shape[0]]), training=True)
    # Ours after batch - 1 optimizer steps, in TFMOT's order (mask, then w).
    ctl.sync(batch - 1)
    ctl.constrain()
    assert int(wrapper.pruning_step.numpy()) == batch
    if schedule(batch)[0]:
      last_pruning_step = batch
    expected = (0.0 if last_pruning_step is None else
                float(schedule(last_pruning_step)[1]))
    assert ctl.target_sparsity() == expected, batch
    np.testing.assert_array_equal(layer.mask.numpy(), tfmot_mask.numpy())
    np.testing.assert_array_equal(layer.w.numpy(), tfmot_kernel.numpy())
    sparsities.add(1.0 - float(np.mean(layer.mask.numpy())))
    # An optimizer step moves every weight, pruned ones too (as in TFMOT).
    weights = layer.w.numpy() + 0.05 * rng.normal(size=shape).astype(
        np.float32)
  assert last_pruning_step == 250 and len(sparsities) > 10
  assert ctl.report()['compressed_cr'] == pytest.approx(
      float(schedule(250)[1]), abs=block**2 / layer.num_params())


def test_gst_cubic_ramp_is_tfmots_polynomial_decay():
  ours = schedules.CubicSchedule(0.1, 0.85, BEGIN, END)
  theirs = tfmot.sparsity.keras.PolynomialDecay(0.1, 0.85, BEGIN, END, power=3)
  for step in range(0, 300):
    assert ours(step) == pytest.approx(float(theirs(step)[1]), abs=1e-6)


def test_late_sync_applies_the_latest_pruning_step():
  # The learner syncs every update_every steps; begin_step need not align.
  layer = _layer(16, 16)
  ctl = controller.make_controller('prune', [layer], s_final=0.9,
                                   begin_step=150, end_step=1000,
                                   update_every=100)
  ctl.sync(100)
  assert layer.phase == layers.DENSE and ctl.target_sparsity() == 0.0
  ctl.sync(300)
  assert layer.phase == layers.SPARSE
  assert ctl.target_sparsity() == float(ctl.schedule(250)[1])
  ctl.sync(2000)
  assert ctl.target_sparsity() == float(ctl.schedule(950)[1]) < 0.9


@pytest.mark.parametrize('block', [2, 4])
def test_group_size_follows_gst_block_size(block):
  """--compression.block_size sets the pruning arm's groups (2x2 vs B=2, 4x4
  vs B=4)."""
  knobs = CompressionConfig(kind='prune', block_size=block, s_final=0.5,
                            begin_step=0, end_step=10,
                            update_every=1).controller_knobs()
  layer = _layer(16, 16)
  ctl = controller.make_controller('prune', [layer], **knobs)
  ctl.sync(20)
  assert layer.block_size == block
  mask = layer.mask.numpy()
  groups = mask.reshape(16 // block, block, 16 // block, block)
  assert np.all(groups == groups[:, :1, :, :1])  # Constant within a group.
  assert 0.4 < 1.0 - mask.mean() < 0.6


def test_pruning_state_survives_a_checkpoint(tmp_path):
  def build():
    layer = _layer(16, 16)
    return layer, controller.make_controller('prune', [layer], s_final=0.8,
                                             begin_step=0, end_step=100,
                                             update_every=10)

  layer, ctl = build()
  ctl.sync(55)
  path = tf.train.Checkpoint(prune=ctl).save(str(tmp_path / 'ckpt'))
  fresh_layer, fresh = build()
  tf.train.Checkpoint(prune=fresh).restore(path).assert_consumed()
  assert fresh.report() == ctl.report()
  np.testing.assert_array_equal(fresh_layer.mask.numpy(), layer.mask.numpy())
  fresh.sync(57)  # No pruning step passed: the masks stay.
  np.testing.assert_array_equal(fresh_layer.mask.numpy(), layer.mask.numpy())

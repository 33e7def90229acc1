"""Schedules, reward-aware clock, controllers (hand-over, CR, checkpoints)."""
import numpy as np
import pytest
import tensorflow as tf

from quarl.compression import controller
from quarl.compression import layers
from quarl.compression import schedules


def _layers(*shapes):
  built = []
  for n, m in shapes:
    layer = layers.CompressibleLinear(m)
    layer(tf.zeros([1, n]))
    built.append(layer)
  return built


def test_cubic_schedule_and_inverse():
  schedule = schedules.CubicSchedule(0.1, 0.9, begin_step=10, end_step=110)
  assert schedule(0) == schedule(10) == pytest.approx(0.1)
  assert schedule(60) == pytest.approx(0.9 - 0.8 * 0.5 ** 3)
  assert schedule(110) == schedule(500) == pytest.approx(0.9)
  assert all(schedule(t) <= schedule(t + 1) for t in range(120))
  for target in (0.2, 0.5, 0.85):
    step = schedule.step_at(target)
    assert schedule(step) <= target < schedule(step + 1)
  assert schedule.step_at(0.05) == 10 and schedule.step_at(0.95) == 110


def test_clock_advances_on_rising_return():
  clock = schedules.RewardAwareClock(schedules.CubicSchedule(0.0, 0.9, 0, 100))
  for value in range(1, 11):
    clock.observe(float(value))
    clock.advance(2)
  assert not clock.paused and int(clock.tick.numpy()) == 20


def _clock_at_its_best():
  """A clock that saw 100 and advanced 50 steps, and its sparsity there."""
  clock = schedules.RewardAwareClock(
      schedules.CubicSchedule(0.0, 0.9, 0, 100), window=2, delta=0.1,
      step_back=0.1, patience=3)
  clock.observe(100.0)
  clock.advance(50)
  return clock, clock.sparsity()


def test_clock_ignores_non_finite_returns():
  clock, s_before = _clock_at_its_best()
  clock.observe(60.0)  # Paused, one evaluation below the band.
  for value in (float('nan'), float('inf'), float('-inf')):
    clock.observe(value)
  assert clock.paused and clock.best == 100.0
  assert clock.moving_average() == 80.0
  clock.observe(60.0)
  clock.observe(60.0)  # The third below: the NaNs did not reset the count.
  assert clock.sparsity() <= s_before - 0.1


def test_clock_pauses_then_steps_back_on_falling_return():
  clock, s_before = _clock_at_its_best()
  clock.observe(60.0)  # moving average 80 < 100 - 10: paused
  assert clock.paused
  clock.advance(5)
  assert int(clock.tick.numpy()) == 50
  clock.observe(60.0)  # second below
  assert clock.sparsity() == s_before
  clock.observe(60.0)  # third below (= patience): step back
  stepped = clock.sparsity()
  tick = int(clock.tick.numpy())
  assert stepped <= s_before - 0.1 < clock.schedule(tick + 1)
  assert clock.best == 100.0
  clock.observe(200.0)  # average (60 + 200) / 2 = 130 > best: resumes
  assert not clock.paused
  clock.advance(1)
  assert int(clock.tick.numpy()) == tick + 1


def _clock(reference, window=1):
  return schedules.RewardAwareClock(
      schedules.CubicSchedule(0.0, 0.9, 0, 1000), window=window, delta=0.1,
      step_back=0.05, patience=3, reference=reference)


def _feed(clock, curve, steps=10):
  """One evaluation per `steps` learner steps; whether each one paused."""
  paused = []
  for value in curve:
    clock.observe(float(value))
    paused.append(clock.paused)
    clock.advance(steps)
  return paused


def test_rising_noisy_return_never_pauses():
  # HalfCheetah-like: from the random policy's -300 up to 3000.
  curve = np.linspace(-300, 3000, 60) + np.random.default_rng(0).normal(
      0, 20, 60)
  clock = _clock(-300.0, window=3)
  assert not any(_feed(clock, curve))
  assert int(clock.tick.numpy()) == 600


def test_dip_deeper_than_the_band_pauses_steps_back_and_recovers():
  clock = _clock(-300.0)
  _feed(clock, [1000.0] * 3)
  assert clock.band() == pytest.approx(130.0)  # 10% of 1000 - (-300)
  tick = int(clock.tick.numpy())
  assert not any(_feed(clock, [880.0] * 3))  # Within the band: holds.
  tick += 30
  assert all(_feed(clock, [860.0] * 3))  # Deeper: paused, then steps back.
  assert int(clock.tick.numpy()) < tick
  assert clock.sparsity() <= clock.schedule(tick) - 0.05
  tick = int(clock.tick.numpy())
  assert not any(_feed(clock, [990.0, 1100.0]))  # Recovered: resumes.
  assert int(clock.tick.numpy()) == tick + 20


def test_best_near_zero_is_not_a_hair_trigger():
  # Early HalfCheetah: returns about 0, the random policy about -300. With a
  # band of delta * |best| any dip below 0 paused; here the band is 30.
  clock = _clock(-300.0, window=3)
  curve = np.random.default_rng(1).normal(0.0, 8.0, 30)
  assert abs(max(np.convolve(curve, np.ones(3) / 3, 'valid'))) < 10
  assert not any(_feed(clock, curve))
  assert clock.band() == pytest.approx(30.0, abs=1.0)
  assert _feed(clock, [-60.0] * 3)[-1]  # A real drop still pauses.


def test_negative_return_task():
  # Pendulum-like: random -1500, trained -200; the band is 10% of the
  # random return's size until more than that is learned: 150, not 20.
  clock = _clock(-1500.0)
  _feed(clock, [-1200.0, -600.0, -200.0])
  assert clock.band() == pytest.approx(150.0)
  assert not any(_feed(clock, [-300.0, -340.0]))
  assert _feed(clock, [-360.0]) == [True]


def test_reference_defaults_to_the_first_return():
  clock = _clock(None)
  _feed(clock, [-500.0, -400.0])
  assert clock.reference == -500.0
  assert clock.band() == pytest.approx(50.0)  # max(100, |-500|) * 0.1
  assert _feed(clock, [-440.0, -460.0]) == [False, True]
  ctl = controller.make_controller('gst', _layers((8, 8)),
                                   reward_reference=-300.0)
  assert ctl.clock.reference == -300.0
  with pytest.raises(ValueError):
    _clock(float('nan'))


@pytest.mark.parametrize('block', [2, 4])
@pytest.mark.parametrize('s_shift', [0.25, 1.0])
def test_hand_over_happens_at_s_shift_target(block, s_shift):
  threshold = s_shift * (1 - 1 / block)
  ctl = controller.make_controller('gst', _layers((16, 16), (16, 8)),
                                   block_size=block, s_shift=s_shift,
                                   s_final=0.9, begin_step=0, end_step=100,
                                   update_every=1000)
  schedule = ctl.clock.schedule
  hand_over = next(t for t in range(101) if schedule(t) >= threshold)
  ctl.after_optimizer_step(hand_over - 1)
  assert ctl.report()['phase'] == layers.CIRCULANT
  assert ctl.report()['compressed_cr'] == 1 - 1 / block
  ctl.after_optimizer_step(hand_over)
  report = ctl.report()
  assert report['phase'] == layers.SPARSE
  target = schedule(hand_over)
  assert report['target_sparsity'] == target
  for layer in ctl.layers:
    one_group = block**2 / layer.num_params()
    assert target - one_group < layer.compression_ratio() <= target


def test_returns_before_the_schedule_starts_set_no_bar():
  # An untrained policy's return (here 0, better than early learning's -500)
  # observed before begin_step must not pause the clock afterwards.
  ctl = controller.make_controller('gst', _layers((16, 16)), block_size=4,
                                   s_final=0.9, begin_step=10, end_step=100,
                                   reward_window=2, patience=2)
  ctl.observe_return(0.0)
  ctl.after_optimizer_step(10)
  for step, value in ((20, -500.0), (30, -450.0), (40, -400.0)):
    ctl.observe_return(value)
    ctl.after_optimizer_step(step)
  assert not ctl.clock.paused
  assert int(ctl.clock.tick.numpy()) == 40


def test_gst_cr_from_step_zero_while_pruning_starts_dense():
  knobs = dict(s_final=0.9, begin_step=5, end_step=50, block_size=4,
               update_every=5)
  gst = controller.make_controller('gst', _layers((16, 16)), **knobs)
  prune = controller.make_controller('prune', _layers((16, 16)), **knobs)
  for ctl in (gst, prune):
    ctl.after_optimizer_step(1)
  assert gst.report()['compressed_cr'] >= 0.75
  assert gst.report()['average_cr'] >= 0.75
  assert prune.report()['compressed_cr'] == 0.0
  assert prune.report()['average_cr'] == 0.0
  assert prune.report()['phase'] == layers.DENSE
  prune.after_optimizer_step(30)
  assert prune.report()['phase'] == layers.SPARSE
  # TFMOT rounds the number of kept groups: within half a group (of 16).
  assert prune.report()['compressed_cr'] == pytest.approx(
      prune.target_sparsity(), abs=0.5 / 16)
  assert prune.target_sparsity() > 0.0


def test_report_cr_accounting_is_exact():
  built = _layers((8, 8), (16, 8))  # 64 + 128 kernel entries
  ctl = controller.make_controller('gst', built, block_size=4, dense_params=100,
                                   begin_step=10, end_step=20)
  ctl.after_optimizer_step(2)
  built[1].to_sparse(0.5)  # 64 of 128 stored
  ctl.after_optimizer_step(4)
  report = ctl.report()
  stored = 16 + 64
  assert report['compressed_cr'] == pytest.approx(1 - stored / 192)
  assert report['network_cr'] == pytest.approx((192 - stored) / 292)
  assert report['average_cr'] == pytest.approx(
      (2 * 0.75 + 2 * (1 - stored / 192)) / 4)
  assert report['cr/compressible_linear'] == 0.75
  assert report['cr/compressible_linear_1'] == 0.5
  assert report['phase'] == 'mixed' and report['learner_step'] == 4


def test_checkpoint_round_trips_controller_state(tmp_path):

  def build(call=True):
    mlp = layers.make_compressible_mlp([8, 8, 8, 2])
    if call:
      mlp(tf.zeros([1, 3]))
    return mlp, controller.make_controller('gst', mlp.compressible_layers,
                                           block_size=2, s_final=0.8,
                                           begin_step=0, end_step=10,
                                           reward_window=2, patience=2)

  _, ctl = build()
  for step in range(1, 9):
    ctl.after_optimizer_step(step)
  ctl.observe_return(10.0)
  ctl.observe_return(1.0)
  path = tf.train.Checkpoint(gst=ctl).save(str(tmp_path / 'ckpt'))
  saved = ctl.report()
  saved_masks = [layer.mask.numpy() for layer in ctl.layers]

  _, fresh = build()
  assert fresh.report()['phase'] == layers.CIRCULANT
  tf.train.Checkpoint(gst=fresh).restore(path).assert_consumed()
  assert fresh.report() == saved
  assert saved['phase'] == layers.SPARSE and saved['clock_paused']
  for layer, mask in zip(fresh.layers, saved_masks):
    np.testing.assert_array_equal(layer.mask.numpy(), mask)
    assert layer.block_size == 2
  assert fresh.clock.best == ctl.clock.best
  assert fresh.clock.reference == ctl.clock.reference == 10.0
  assert fresh.clock.moving_average() == ctl.clock.moving_average()
  fresh.after_optimizer_step(9)  # paused: the clock does not move
  assert int(fresh.clock.tick.numpy()) == int(ctl.clock.tick.numpy())

  # Restoring before the first call (variables created later) works too.
  mlp, late = build(call=False)
  status = tf.train.Checkpoint(gst=late).restore(path)
  mlp(tf.zeros([1, 3]))
  status.assert_consumed()
  assert late.report() == saved


@pytest.mark.parametrize('kind,knobs', [
    ('sparse', {}),
    ('gst', dict(block_size=3)),
    ('gst', dict(s_shift=0.0)),
    ('gst', dict(s_shift=1.5)),
    ('gst', dict(s_final=1.0)),
    ('prune', dict(s_init=-0.1)),
    ('prune', dict(begin_step=10, end_step=10)),
    ('gst', dict(granularity='row')),
    ('none', dict(blok_size=4)),
    ('static', dict(s_final=1.0)),
    ('rigl', dict(topology_every=150)),  # Not a multiple of update_every.
    ('rigl', dict(drop_fraction=0.0)),
])
def test_make_controller_rejects_bad_knobs(kind, knobs):
  with pytest.raises(ValueError):
    controller.make_controller(kind, _layers((4, 4)), **knobs)


def test_make_controller_kinds_share_interface():
  for kind in controller.CONTROLLERS:
    ctl = controller.make_controller(kind, _layers((8, 8)), block_size=4,
                                     s_shift=0.5, reward_delta=0.2)
    ctl.observe_return(1.0)
    ctl.after_optimizer_step(1)
    assert {'learner_step', 'phase', 'target_sparsity', 'compressed_cr',
            'network_cr', 'average_cr'} <= set(ctl.report())

"""TD3 with GST and with iterative pruning, as real programs end to end.

The reward-aware clock is held open (--compression.reward_delta far above any return gap)
so the schedule moves with learner steps alone: the hand-over then happens
at the same learner step on any machine, and what is tested is GST's life
cycle, not learning. Publishes are by learner step for the same reason.
"""
import numpy as np
import pytest
import tensorflow as tf

from conftest import rows
from conftest import train_and_check_contract

BLOCK = 4
FINAL_SPARSITY = 0.9
SPARSE_PHASE = 2  # quarl.compression.layers.PHASES.index(SPARSE)
# Each run ends on its --max_actor_steps; --max_seconds is only a backstop
# against a hang, generous for a slow machine.
FLAGS = ('--agent=td3', '--env=gym:Pendulum-v1', '--actor_precision=int8',
         '--num_actors=1', f'--compression.block_size={BLOCK}',
         f'--compression.s_final={FINAL_SPARSITY}',
         '--compression.begin_step=0', '--compression.end_step=800',
         '--compression.reward_delta=1e9', '--publish_period=250',
         '--td3.min_replay_size=500', '--max_seconds=900')


def _compressed_layers(run_dir):
  """{layer index: (phase, mask, w)} from the learner's last checkpoint."""
  reader = tf.train.load_checkpoint(str(run_dir / 'checkpoints' / 'learner'))
  layers = {}
  for key in reader.get_variable_to_shape_map():
    if key.startswith('compression/layers/') and key.endswith('/mask/'
                                                              '.ATTRIBUTES/'
                                                              'VARIABLE_VALUE'):
      index = key.split('/')[2]
      prefix = f'compression/layers/{index}/'
      suffix = '/.ATTRIBUTES/VARIABLE_VALUE'
      layers[index] = (int(reader.get_tensor(prefix + '_phase' + suffix)),
                       reader.get_tensor(prefix + 'mask' + suffix),
                       reader.get_tensor(prefix + 'w' + suffix))
  return layers


def _assert_group_pruned(run_dir, sparsity):
  """Every compressed layer is pruned in BxB groups at `sparsity`, and the
  weights the learner trains are zero wherever the mask is."""
  layers = _compressed_layers(run_dir)
  assert len(layers) == 3  # The policy's hidden layer and both critics'.
  for phase, mask, w in layers.values():
    assert phase == SPARSE_PHASE
    rows_, cols = mask.shape
    blocks = mask.reshape(rows_ // BLOCK, BLOCK, cols // BLOCK, BLOCK)
    assert np.all(blocks.min(axis=(1, 3)) == blocks.max(axis=(1, 3)))
    assert np.mean(mask == 0) == pytest.approx(sparsity, abs=0.01)
    assert np.all(w[mask == 0] == 0)
    assert np.count_nonzero(w) > 0


def _schedule_rows(run_dir):
  return [dict(row, learner_step=int(row['learner_step']),
               compressed_cr=float(row['compressed_cr']),
               target_sparsity=float(row['target_sparsity']))
          for row in rows(run_dir / 'compression.csv')]


@pytest.fixture(scope='module')
def gst_run(tmp_path_factory):
  run_dir = tmp_path_factory.mktemp('gst') / 'run'
  summary = train_and_check_contract(
      run_dir, *FLAGS, '--compression.kind=gst', '--compression.s_shift=0.25',
      '--publish_sparse', '--max_actor_steps=2500')
  return run_dir, summary


def test_gst_hands_over_from_circulant_to_growing_group_sparsity(gst_run):
  run_dir, summary = gst_run
  schedule = _schedule_rows(run_dir)
  phases = [row['phase'] for row in schedule]
  handover = phases.index('sparse')
  assert handover > 0 and set(phases[:handover]) == {'circulant'}
  assert set(phases[handover:]) == {'sparse'}
  assert all(row['compressed_cr'] == pytest.approx(1 - 1 / BLOCK)
             for row in schedule[:handover])
  # S_shift 0.25: pruning takes over at a quarter of circulant's CR, and the
  # CR then follows the target up to the final sparsity.
  after = [row['compressed_cr'] for row in schedule[handover:]]
  assert after[0] < 1 - 1 / BLOCK
  assert after == sorted(after)
  assert after[-1] == pytest.approx(FINAL_SPARSITY, abs=0.01)
  assert summary['compression'] == 'gst'
  assert summary['final_cr'] == pytest.approx(FINAL_SPARSITY, abs=0.01)
  _assert_group_pruned(run_dir, FINAL_SPARSITY)


def test_actors_run_the_sparse_int8_model_after_the_handover(gst_run):
  run_dir, _ = gst_run
  published = [row for row in rows(run_dir / 'quantizer.csv')
               if row['status'] == 'published']
  first_bytes = int(published[0]['model_bytes'])
  pruned = [row for row in published
            if int(row['learner_steps']) >= 800]  # At the final sparsity.
  assert pruned, published
  # A 90%-group-sparse policy in TFLite's sparse format is far smaller than
  # the dense-stored circulant one the first publish shipped.
  assert all(int(row['model_bytes']) < 0.5 * first_bytes for row in pruned)
  first_pruned_version = min(int(row['version']) for row in pruned)
  assert max(int(row['policy_version'])
             for row in rows(run_dir / 'actors.csv')) >= first_pruned_version


def test_resumed_gst_run_keeps_its_masks_phase_and_clock(gst_run):
  run_dir, _ = gst_run
  before = _schedule_rows(run_dir)
  summary = train_and_check_contract(
      run_dir, *FLAGS, '--compression.kind=gst', '--compression.s_shift=0.25',
      '--publish_sparse', '--max_actor_steps=3500', '--resume')
  resumed = _schedule_rows(run_dir)[len(before):]
  assert resumed, 'the resumed learner wrote no compression rows'
  assert resumed[0]['learner_step'] >= before[-1]['learner_step']
  assert {row['phase'] for row in resumed} == {'sparse'}
  assert all(row['target_sparsity'] == pytest.approx(FINAL_SPARSITY)
             for row in resumed)
  assert summary['actor_steps'] >= 3500
  _assert_group_pruned(run_dir, FINAL_SPARSITY)


def test_iterative_pruning_program_end_to_end(tmp_path):
  run_dir = tmp_path / 'run'
  summary = train_and_check_contract(
      run_dir, *FLAGS, '--compression.kind=prune', '--max_actor_steps=2000')
  schedule = _schedule_rows(run_dir)
  crs = [row['compressed_cr'] for row in schedule]
  assert crs[0] == 0.0 and crs == sorted(crs)
  assert crs[-1] == pytest.approx(FINAL_SPARSITY, abs=0.01)
  assert summary['compression'] == 'prune'
  _assert_group_pruned(run_dir, FINAL_SPARSITY)


def test_rigl_program_keeps_its_sparsity_while_masks_move(tmp_path):
  run_dir = tmp_path / 'run'
  summary = train_and_check_contract(
      run_dir, *FLAGS, '--compression.kind=rigl',
      '--compression.topology_every=200', '--max_actor_steps=2000')
  schedule = rows(run_dir / 'compression.csv')
  crs = {float(row['compressed_cr']) for row in schedule}
  # Sparse from step 0, the same number of active groups at every row.
  assert len(crs) == 1 and crs.pop() == pytest.approx(FINAL_SPARSITY,
                                                       abs=0.01)
  # Masks moved at learner steps 200, 400 and 600 (none from end_step 800).
  assert int(schedule[-1]['mask_updates']) == 3
  assert int(schedule[-1]['learner_step']) > 800
  assert summary['compression'] == 'rigl'
  assert summary['average_cr'] == pytest.approx(FINAL_SPARSITY, abs=0.01)
  _assert_group_pruned(run_dir, FINAL_SPARSITY)

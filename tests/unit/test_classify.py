"""GST on a supervised classifier (launch.classify, quarl.classify): it
learns digits, its masks and ties hold through optimizer steps, its CR is
the RL learner's for the same layers, and the CIFAR-10 reader reads the
real python-pickle format."""
import json
import os
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from launch import classify as classify_cli
from quarl.compression.config import CompressionConfig
from launch.nodes import learner as learner_node
from quarl import classify
from quarl.compression import circulant
from quarl.compression import layers as layers_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
DEPTH = 8  # One block per stage: the smallest CIFAR ResNet.


@pytest.fixture(scope='module')
def digits():
  return classify.load('digits')


def _model(dataset, seed=0, depth=DEPTH):
  tf.random.set_seed(seed)
  return classify.make_resnet(depth, dataset.image_shape, dataset.num_classes)


def _compression(kind, **knobs):
  return CompressionConfig(kind=kind, reward_reference=0.1, **knobs)


def _trainer(dataset, kind, epochs, **knobs):
  model = _model(dataset)
  controller = classify_cli.make_controller(model, _compression(kind,
                                                                **knobs))
  config = classify.TrainConfig(epochs=epochs, batch_size=64, seed=0)
  return classify.Trainer(model, dataset, controller, config)


def test_digits_split_is_fixed_and_standardized(digits):
  assert (len(digits.train), len(digits.val), len(digits.test)) == (
      1197, 300, 300)
  assert digits.image_shape == (8, 8, 1) and not digits.augment
  np.testing.assert_allclose(digits.train.images.mean(), 0.0, atol=1e-5)
  np.testing.assert_array_equal(classify.load('digits').test.labels,
                                digits.test.labels)


def test_gst_learning_curve_on_digits_rises_above_chance(digits):
  trainer = _trainer(digits, 'gst', epochs=4, begin_step=20, end_step=60,
                     update_every=5)
  untrained = trainer.accuracy(digits.val)
  history = [trainer.train_epoch() for _ in range(4)]
  assert history[-1].step == trainer.total_steps == 4 * 19
  # Chance is 0.1; four epochs of a compressed ResNet-8 reach far past it.
  assert history[-1].val_acc > 0.6 and history[-1].test_acc > 0.6
  assert history[-1].val_acc > untrained + 0.3
  assert history[-1].train_loss < history[0].train_loss
  # The run went through GST's life cycle: circulant, then group-pruned.
  report = trainer.controller.report()
  assert report['phase'] == layers_lib.SPARSE
  assert report['compressed_cr'] == pytest.approx(0.9, abs=0.01)
  assert 0.75 < report['average_cr'] < 0.9


def test_masks_hold_through_optimizer_steps(digits):
  trainer = _trainer(digits, 'prune', epochs=2, begin_step=0, end_step=10,
                     s_final=0.6, update_every=5)
  trainer.train_epoch()
  masks = [layer.mask.numpy().copy() for layer in trainer.controller.layers]
  trainer.train_epoch()  # 19 more momentum steps; masks already final.
  for layer, mask in zip(trainer.controller.layers, masks):
    kernel = layer.w.numpy()
    assert layer.phase == layers_lib.SPARSE
    np.testing.assert_array_equal(layer.mask.numpy(), mask)
    assert 1 - mask.mean() == pytest.approx(0.6, abs=0.02)
    assert np.all(kernel[mask == 0] == 0)
    assert np.count_nonzero(kernel) == layer.stored_params() == mask.sum()


def test_circulant_ties_hold_through_optimizer_steps(digits):
  trainer = _trainer(digits, 'gst', epochs=1, begin_step=1000,
                     end_step=2000, update_every=5)
  trainer.train_epoch()
  for layer in trainer.controller.layers:
    matrix = layer.kernel_matrix()
    assert layer.phase == layers_lib.CIRCULANT
    np.testing.assert_allclose(circulant.project_dense(matrix, 4), matrix,
                               atol=1e-6)
    assert float(tf.reduce_max(tf.abs(matrix))) > 0


@pytest.mark.parametrize('kind', ['gst', 'prune'])
def test_cr_accounting_matches_the_rl_learner(digits, kind):
  config = _compression(kind, begin_step=0, end_step=40, update_every=10)
  ours = _model(digits)
  theirs = _model(digits)
  mine = classify_cli.make_controller(ours, config)
  rl = learner_node.make_controller(
      types.SimpleNamespace(compressible_layers=theirs.compressible_layers,
                            networks=[theirs]),
      types.SimpleNamespace(compression=config))
  # Kernel entries by hand: stage convs [3, 3, in, out], blocks of ResNet-8.
  convs = [(16, 16), (16, 16), (16, 32), (32, 32), (32, 64), (64, 64)]
  kernels = sum(9 * i * o for i, o in convs)
  # First conv 3x3x1x16, batch-norm scale and offset, classifier 64x10 + 10.
  dense = 9 * 16 + 2 * (16 + 2 * (16 + 32 + 64)) + 64 * 10 + 10
  if kind == 'gst':  # B=4 circulant from step 0 on every compressible conv.
    report = mine.report()
    assert report['compressed_cr'] == 0.75
    assert report['network_cr'] == pytest.approx(
        0.75 * kernels / (kernels + dense))
  for step in (0, 10, 20, 30, 40, 50):
    mine.sync(step)
    rl.sync(step)
    assert mine.report() == rl.report()
  final = mine.report()
  assert final['compressed_cr'] == pytest.approx(0.9, abs=0.005)
  stored = sum(layer.stored_params() for layer in mine.layers)
  assert final['network_cr'] == pytest.approx(
      (kernels - stored) / (kernels + dense))


def _cifar_batch(path, count, seed):
  """A batch in the real format: what pickle.dump wrote for CIFAR-10."""
  rng = np.random.default_rng(seed)
  batch = {b'batch_label': b'synthetic batch',
           b'labels': [int(x) for x in rng.integers(0, 10, count)],
           b'data': rng.integers(0, 256, (count, 3072), dtype=np.uint8),
           b'filenames': [b'image_%d.png' % i for i in range(count)]}
  with open(path, 'wb') as handle:
    pickle.dump(batch, handle, protocol=2)
  return batch


def test_cifar_reader_parses_the_python_pickle_format(tmp_path):
  batch = _cifar_batch(tmp_path / 'data_batch_1', 3, seed=0)
  images, labels = classify.read_cifar_batch(str(tmp_path / 'data_batch_1'))
  assert images.shape == (3, 32, 32, 3) and images.dtype == np.uint8
  np.testing.assert_array_equal(labels, batch[b'labels'])
  data = batch[b'data']
  # Row r, column c, channel k of image n is data[n, 1024 k + 32 r + c].
  for n, r, c, k in [(0, 0, 0, 0), (1, 5, 31, 1), (2, 31, 7, 2)]:
    assert images[n, r, c, k] == data[n, 1024 * k + 32 * r + c]


def test_cifar_loader_splits_a_directory_of_batches(tmp_path):
  root = tmp_path / 'cifar-10-batches-py'
  root.mkdir()
  for index, name in enumerate(classify.data.CIFAR_TRAIN_FILES):
    _cifar_batch(root / name, 4, seed=index)
  _cifar_batch(root / 'test_batch', 3, seed=9)
  # The parent directory (where the tarball was unpacked) works too.
  dataset = classify.load(f'cifar10:{tmp_path}')
  assert (len(dataset.train), len(dataset.val), len(dataset.test)) == (
      18, 2, 3)
  assert dataset.image_shape == (32, 32, 3) and dataset.augment
  np.testing.assert_allclose(dataset.train.images.mean(axis=(0, 1, 2)),
                             0.0, atol=1e-5)
  (root / 'data_batch_3').write_bytes(b'not a pickle')
  with pytest.raises(classify.DataError, match='data_batch_3 is not a '
                     'CIFAR-10 python batch'):
    classify.load(f'cifar10:{root}')
  (root / 'test_batch').unlink()
  with pytest.raises(classify.DataError, match='missing test_batch'):
    classify.load(f'cifar10:{root}')
  with pytest.raises(classify.DataError, match='no such directory'):
    classify.load(f'cifar10:{tmp_path / "nowhere"}')


def _classify(*args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  return subprocess.run([sys.executable, '-m', 'launch.classify', *args],
                        capture_output=True, text=True, timeout=240,
                        cwd=ROOT, env=env)


def test_a_bad_cifar_path_is_one_line_and_exit_2(tmp_path):
  run_dir = tmp_path / 'run'
  proc = _classify(f'--data=cifar10:{tmp_path / "nowhere"}',
                   f'--run_dir={run_dir}')
  assert proc.returncode == 2
  assert proc.stderr.count('\n') == 1
  assert proc.stderr.startswith('classify: error: --data=cifar10:')
  assert 'no such directory' in proc.stderr
  assert not run_dir.exists()


def test_the_command_line_writes_the_run_directory(tmp_path):
  run_dir = tmp_path / 'run'
  proc = _classify('--data=digits', f'--depth={DEPTH}', '--epochs=2',
                   '--batch_size=128', '--compression.kind=gst',
                   '--compression.update_every=5', f'--run_dir={run_dir}')
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert 'epoch 2/2 step 20 ' in proc.stdout
  rows = classify_cli.run_dir_lib.read_csv(str(run_dir / 'metrics.csv'))
  assert [int(r['epoch']) for r in rows] == [1, 2]
  assert set(classify_cli.METRICS_FIELDS) == set(rows[0])
  compression = classify_cli.run_dir_lib.read_csv(
      str(run_dir / 'compression.csv'))
  assert [int(r['learner_step']) for r in compression] == [0, 5, 10, 15, 20]
  with open(run_dir / 'summary.json') as handle:
    summary = json.load(handle)
  assert summary['status'] == 'completed' and summary['steps'] == 20
  assert summary['final_cr'] == pytest.approx(
      float(compression[-1]['compressed_cr']), rel=1e-5)
  with open(run_dir / 'config.json') as handle:
    config = json.load(handle)
  # Schedule: 20% to 80% of the run's optimizer steps, chance as reference.
  assert (config['compression']['begin_step'],
          config['compression']['end_step']) == (4, 16)
  assert config['compression']['reward_reference'] == 0.1
  assert (run_dir / 'curves.png').stat().st_size > 0
  assert config['train']['batch_size'] == 128

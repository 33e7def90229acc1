r"""GST beyond RL: train a CIFAR ResNet classifier under a compression
controller, with the RL learners' knobs and CR accounting.

  python -m launch.classify --data=digits --epochs=40 --batch_size=64 \
      --compression.kind=gst --run_dir=runs/classify_digits_gst
  python -m launch.classify --data=cifar10:~/data/cifar-10-batches-py \
      --compression.kind=gst --run_dir=runs/cifar10_resnet32_gst

The controller's clock is the optimizer step, and GST's reward is
validation accuracy (measured every epoch; chance accuracy is the reference
its pause band is measured from, as the random policy's return is in RL).
The schedule runs from --compression.begin_step to .end_step, by default
20% and 80% of the run's optimizer steps.

Writes under --run_dir: config.json, metrics.csv (one row per epoch),
compression.csv (one row per controller sync), summary.json and
curves.png. Exit codes: 0 done; 1 the loss stopped being finite; 2 bad
input (nothing written); 130 interrupted (summary.json says so).
"""
import dataclasses
import math
import os
import sys
import time

from absl import flags
import tensorflow as tf

from launch import cli
from launch import compression_flags
from launch.runtime import run_dir as run_dir_lib
from launch import settings
from quarl.compression.config import COMPRESSION_KINDS
from quarl.compression.config import CompressionConfig
from quarl import classify
from quarl import compression as compression_lib

METRICS_FIELDS = ('epoch', 'step', 'train_loss', 'train_acc', 'val_acc',
                  'test_acc', 'learning_rate', 'compressed_cr', 'wall_s')
# Default schedule span, as fractions of the run's optimizer steps.
SCHEDULE_SPAN = (0.2, 0.8)
EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130

_DATA = flags.DEFINE_string(
    'data', 'digits', 'digits (scikit-learn\'s bundled 8x8 digits) or '
    'cifar10:PATH (the python-pickle batches, cifar-10-batches-py, from a '
    'copy you have; nothing is downloaded).')
_DEPTH = flags.DEFINE_integer(
    'depth', 32, 'ResNet depth 6n+2 (20, 32, 44, 56, 110; 8 is the '
    'smallest).')
TRAIN_FLAGS = settings.define(classify.TrainConfig)
_RUN_DIR = flags.DEFINE_string('run_dir', None, 'Where the run writes.')
_OVERWRITE = flags.DEFINE_bool(
    'overwrite', False, 'Empty --run_dir first; only a directory a previous '
    'run made, and never one a live run holds.')
# Optimizer steps between controller syncs (and compression.csv rows) when
# --compression.update_every is not given: ~20 syncs an epoch on digits.
UPDATE_EVERY = 20
flags.adopt_module_key_flags(settings)  # The generated flags, in --help.


def make_controller(model, config: CompressionConfig):
  """The RL learner's controller (launch/nodes/learner.py) over `model`:
  its compressible layers, every other trainable parameter as dense."""
  layers = model.compressible_layers
  return compression_lib.make_controller(
      config.kind, layers,
      dense_params=compression_lib.dense_param_count([model], layers),
      **config.controller_knobs())


def _check(condition: bool, message: str) -> None:
  if not condition:
    raise cli.UsageError(message)


def settings_from_flags():
  """(dataset, TrainConfig, CompressionConfig, run_dir), or UsageError."""
  _check(bool(_RUN_DIR.value), '--run_dir is required')
  train = dataclasses.replace(classify.TrainConfig(), **TRAIN_FLAGS.given())
  _check(train.epochs > 0, f'--epochs={train.epochs} must be > 0')
  _check(train.batch_size > 0, f'--batch_size={train.batch_size} must be > 0')
  _check(cli.finite_positive(train.learning_rate),
         f'--learning_rate={train.learning_rate} must be > 0 and finite')
  _check(0 <= train.momentum < 1,
         f'--momentum={train.momentum}: want a value in [0, 1)')
  _check(0 <= train.weight_decay < math.inf,
         f'--weight_decay={train.weight_decay} must be >= 0 and finite')
  _check(0 <= train.seed <= cli.MAX_SEED,
         f'--seed={train.seed}: want an integer in [0, {cli.MAX_SEED}]')
  try:
    classify.blocks_per_stage(_DEPTH.value)
  except ValueError as error:
    raise cli.UsageError(f'--depth={_DEPTH.value}: {error}') from error
  try:
    dataset = classify.load(_DATA.value)
  except classify.DataError as error:
    raise cli.UsageError(str(error)) from error
  total = train.epochs * classify.steps_per_epoch(len(dataset.train),
                                                  train.batch_size)
  begin = int(SCHEDULE_SPAN[0] * total)
  compression = compression_flags.compression_config(
      begin_step=begin, end_step=max(int(SCHEDULE_SPAN[1] * total), begin + 1),
      reward_reference=1.0 / dataset.num_classes, update_every=UPDATE_EVERY)
  _check(compression.kind in COMPRESSION_KINDS,
         f'--compression.kind={compression.kind!r} is not valid; choose '
         f'from: {", ".join(COMPRESSION_KINDS)}')
  _check(compression.update_every > 0,
         f'--compression.update_every={compression.update_every} must be '
         '> 0')
  compression = dataclasses.replace(compression,
                                    log_every=compression.update_every)
  try:  # The controller's own checks, before anything is written.
    compression_lib.make_controller(compression.kind, [],
                                    **compression.controller_knobs())
  except ValueError as error:
    raise cli.UsageError(str(error)) from error
  return dataset, train, compression, os.path.expanduser(_RUN_DIR.value)


def _config_record(dataset, train, compression) -> dict:
  return dict(command=' '.join(['python -m launch.classify'] + sys.argv[1:]),
              data=_DATA.value, depth=_DEPTH.value,
              image_shape=list(dataset.image_shape),
              split_sizes=dict(train=len(dataset.train), val=len(dataset.val),
                               test=len(dataset.test)),
              total_steps=train.epochs * classify.steps_per_epoch(
                  len(dataset.train), train.batch_size),
              train=dataclasses.asdict(train),
              compression=dataclasses.asdict(compression))


def _summary(status, trainer, controller, history, wall_s, train,
             compression) -> dict:
  report = controller.report()
  best = max(history, key=lambda m: m.val_acc) if history else None
  last = history[-1] if history else None
  return dict(
      status=status, data=_DATA.value, depth=_DEPTH.value,
      compression=compression.kind, block_size=compression.block_size,
      s_shift=compression.s_shift, seed=train.seed,
      epochs=trainer.epoch, steps=trainer.step,
      total_steps=trainer.total_steps,
      final_train_acc=last.train_acc if last else None,
      final_val_acc=last.val_acc if last else None,
      final_test_acc=last.test_acc if last else None,
      best_val_acc=best.val_acc if best else None,
      best_val_epoch=best.epoch if best else None,
      test_acc_at_best_val=best.test_acc if best else None,
      average_cr=report['average_cr'], final_cr=report['compressed_cr'],
      final_network_cr=report['network_cr'],
      compressed_kernel_params=sum(l.num_params() for l in controller.layers),
      stored_kernel_params=sum(l.stored_params() for l in controller.layers),
      total_params=sum(int(v.shape.num_elements())
                       for v in trainer.model.trainable_variables),
      wall_s=round(wall_s, 2),
      steps_per_s=trainer.step / wall_s if wall_s else None)


def plot(run_dir: str) -> None:
  """Accuracy per epoch and CR per optimizer step, side by side."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  metrics = run_dir_lib.read_csv(
      os.path.join(run_dir, run_dir_lib.METRICS_CSV))
  rows = run_dir_lib.read_csv(os.path.join(run_dir,
                                           run_dir_lib.COMPRESSION_CSV))
  figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
  epochs = [int(r['epoch']) for r in metrics]
  for key in ('train_acc', 'val_acc', 'test_acc'):
    left.plot(epochs, [float(r[key]) for r in metrics], marker='.',
              label=key)
  left.set(xlabel='epoch', ylabel='accuracy', ylim=(0, 1), title='accuracy')
  left.legend()
  steps = [int(r['learner_step']) for r in rows]
  for key in ('compressed_cr', 'target_sparsity'):
    right.plot(steps, [float(r[key]) for r in rows], label=key)
  right.set(xlabel='optimizer step', ylim=(0, 1),
            title='compression (compressible layers)')
  right.legend()
  figure.tight_layout()
  figure.savefig(os.path.join(run_dir, run_dir_lib.CURVES_PNG), dpi=100)
  plt.close(figure)


def run(dataset, train, compression, run_dir) -> int:
  """Trains to the end (or a stop), writing the run directory; exit code."""
  start = time.time()
  path = lambda name: os.path.join(run_dir, name)  # pylint: disable=unnecessary-lambda-assignment
  run_dir_lib.write_json_atomic(path(run_dir_lib.CONFIG_JSON),
                                _config_record(dataset, train, compression))
  tf.random.set_seed(train.seed)
  model = classify.make_resnet(_DEPTH.value, dataset.image_shape,
                               dataset.num_classes)
  controller = make_controller(model, compression)
  trainer = classify.Trainer(model, dataset, controller, train)
  compression_csv = []

  def log_compression(step: int) -> None:
    del step  # The report carries it.
    row = dict(wall_time_s=time.time() - start, **controller.report())
    if not compression_csv:
      compression_csv.append(run_dir_lib.CsvAppender(
          path(run_dir_lib.COMPRESSION_CSV), tuple(row)))
    compression_csv[0].append(row)

  log_compression(trainer.step)
  metrics_csv = run_dir_lib.CsvAppender(path(run_dir_lib.METRICS_CSV),
                                        METRICS_FIELDS)
  print(f'classify: {dataset.name} ({len(dataset.train)} train, '
        f'{len(dataset.val)} val, {len(dataset.test)} test), ResNet-'
        f'{_DEPTH.value}, --compression.kind={compression.kind}, '
        f'{trainer.total_steps} steps (schedule {compression.begin_step}-'
        f'{compression.end_step})', flush=True)
  history, status, code = [], 'completed', EXIT_OK
  try:
    while trainer.epoch < train.epochs:
      metrics = trainer.train_epoch(on_sync=log_compression)
      history.append(metrics)
      cr = controller.report()
      wall_s = time.time() - start
      metrics_csv.append(dict(
          dataclasses.asdict(metrics), learning_rate=trainer.learning_rate_at(
              metrics.step - 1), compressed_cr=cr['compressed_cr'],
          wall_s=wall_s))
      print(f'epoch {metrics.epoch}/{train.epochs} step {metrics.step} '
            f'loss {metrics.train_loss:.4f} train {metrics.train_acc:.4f} '
            f'val {metrics.val_acc:.4f} test {metrics.test_acc:.4f} '
            f'CR {cr["compressed_cr"]:.3f} (target '
            f'{cr["target_sparsity"]:.3f}) {wall_s:.0f}s', flush=True)
      if not math.isfinite(metrics.train_loss):
        status, code = (f'failed: training loss is {metrics.train_loss} '
                        f'in epoch {metrics.epoch}'), EXIT_FAILED
        break
  except KeyboardInterrupt:
    status, code = 'interrupted', EXIT_INTERRUPTED
  controller.sync(trainer.step)  # Steps since the last sync, accounted.
  summary = _summary(status, trainer, controller, history,
                     time.time() - start, train, compression)
  run_dir_lib.write_json_atomic(path(run_dir_lib.SUMMARY_JSON), summary)
  if history:
    plot(run_dir)
  print(f'{status}: test accuracy {summary["final_test_acc"]}, average CR '
        f'{summary["average_cr"]:.4f}, final CR {summary["final_cr"]:.4f} '
        f'(network {summary["final_network_cr"]:.4f}); run directory: '
        f'{run_dir}', flush=True)
  return code


def main(argv):
  del argv  # run_main refuses positional arguments.
  try:
    dataset, train, compression, run_dir = settings_from_flags()
    run_dir = run_dir_lib.prepare_run_dir(run_dir, _OVERWRITE.value)
  except (cli.UsageError, run_dir_lib.RunDirError) as error:
    cli.usage_exit('classify', str(error))
  sys.exit(run(dataset, train, compression, run_dir))


if __name__ == '__main__':
  cli.run_main(main, 'classify')

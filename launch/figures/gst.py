r"""GST's building blocks and a short GST vs iterative pruning comparison.

For notebooks/gst.ipynb; the RL comparison is launch.reproduce_gst.

  python -m launch.figures.gst --out=runs/figures/gst

Writes, into --out:
  layers.csv       the compressible MLP's layers;
  projection.csv   one hidden kernel projected to block-circulant form;
  circulant.png    its top-left corner before and after;
  transforms.csv   weight shift of each block-size transform;
  history.csv      per method (dense, iterative pruning, GST): CR and
                   validation MSE over training on a regression task;
  cr.png           CR and fit over training;
  summary.csv      average CR, final CR and fit, GST's hand-over step.
"""
import numpy as np
import sonnet as snt
import tensorflow as tf
from absl import flags

from launch import figures
from quarl import compression

_OUT = flags.DEFINE_string('out', None, 'Directory for the CSV and PNG files.')
_TRAIN_STEPS = flags.DEFINE_integer('train_steps', 1800,
                                    'Adam steps per method.')
_BLOCK_SIZE = flags.DEFINE_integer('block_size', 4, 'Circulant block size B.')
_S_SHIFT = flags.DEFINE_float(
    's_shift', 1.0, 'GST hands a layer over to group pruning when the target '
    'reaches s_shift x (1 - 1/B).')
_S_FINAL = flags.DEFINE_float('s_final', 0.9, 'Final target sparsity.')
_HIDDEN = flags.DEFINE_string('hidden', '256,256,256', 'Hidden widths.')
_EVAL_EVERY = flags.DEFINE_integer(
    'eval_every', 25, 'Steps between validation "returns" (history rows).')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed for weights, data, batches.')
flags.mark_flag_as_required('out')

INPUTS = 8
BATCH = 128


def make_network(hidden, seed):
  """Plain first and last layers; CompressibleLinear hidden->hidden ones."""
  tf.random.set_seed(seed)
  network = compression.make_compressible_mlp(list(hidden) + [1],
                                              name='regressor')
  network(tf.zeros([1, INPUTS]))  # create the variables
  return network


def projection(network, block_size, out):
  """Projects the first hidden kernel to B-circulant form; plots a corner."""
  layer = network.compressible_layers[0]
  dense = layer.w.numpy().copy()
  shift = layer.to_circulant(block_size)
  circulant = layer.w.numpy().copy()
  figures.write_csv(out, 'projection.csv', [dict(
      layer=layer.name, phase=layer.phase, cr=layer.compression_ratio(),
      circulant_cr=1 - 1 / block_size, weight_shift=shift)])
  plt = figures.pyplot()
  corner = slice(0, 3 * block_size)
  figure, axes = plt.subplots(1, 2, figsize=(9, 4))
  for axis, kernel, title in zip(
      axes, (dense, circulant),
      ('dense (initial)', f'block-circulant, B={block_size}')):
    limit = np.abs(kernel[corner, corner]).max()  # averaging shrinks values
    image = axis.imshow(kernel[corner, corner], cmap='RdBu', vmin=-limit,
                        vmax=limit)
    figure.colorbar(image, ax=axis, shrink=0.8)
    for edge in np.arange(block_size, 3 * block_size, block_size) - 0.5:
      axis.axhline(edge, color='black', linewidth=1)
      axis.axvline(edge, color='black', linewidth=1)
    axis.set(title=title, xticks=[], yticks=[])
  figures.save_figure(figure, out, 'circulant.png')
  return dense, circulant


def transforms(dense, b4):
  """(name, weight shift) of each move between block sizes."""
  b2 = compression.project_dense(dense, 2).numpy()
  friendly = compression.to_friendly_b2(dense).numpy()
  pairs = [
      ('dense -> B4', dense, b4),
      ('dense -> B2', dense, b2),
      ('dense -> block4-friendly B2', dense, friendly),
      ('B4 -> B2', b4, compression.b4_to_b2(b4)),
      ('B2 -> B4', b2, compression.b2_to_b4(b2)),
      ('B2 -> B4 -> B2', b2, compression.b4_to_b2(compression.b2_to_b4(b2))),
      ('friendly B2 -> B4', friendly, compression.b2_to_b4(friendly)),
      ('friendly B2 -> B4 -> B2', friendly,
       compression.b4_to_b2(compression.b2_to_b4(friendly))),
  ]
  return [dict(transform=name, weight_shift=compression.weight_shift(
      before, np.asarray(after))) for name, before, after in pairs]


def regression_data(seed):
  """x ~ N(0, I), y = sum_k sin(x . a_k): a fast, deterministic RL stand-in."""
  rng = np.random.default_rng(seed)
  directions = rng.normal(size=(INPUTS, 4)).astype(np.float32)

  def target(x):
    return np.sin(x @ directions).sum(axis=1, keepdims=True).astype(np.float32)

  x_train = rng.normal(size=(4096, INPUTS)).astype(np.float32)
  x_valid = rng.normal(size=(1024, INPUTS)).astype(np.float32)
  return x_train, target(x_train), x_valid, target(x_valid)


def train(kind, hidden, data, schedule):
  """The learner node's protocol on the regression task; history rows.

  Adam step, then controller.after_optimizer_step(step); every eval_every
  steps -validation MSE goes to observe_return (the "return" GST's
  reward-aware clock watches) and controller.report() is recorded.
  """
  x_train, y_train, x_valid, y_valid = data
  network = make_network(hidden, _SEED.value)
  layers = network.compressible_layers
  controller = compression.make_controller(
      kind, layers, dense_params=compression.dense_param_count([network],
                                                               layers),
      **schedule)
  optimizer = snt.optimizers.Adam(1e-3)

  @tf.function
  def adam_step(x, y):
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(tf.square(network(x) - y))
    optimizer.apply(tape.gradient(loss, network.trainable_variables),
                    network.trainable_variables)

  def validation_mse():
    return float(tf.reduce_mean(tf.square(network(x_valid) - y_valid)))

  batch_rng = np.random.default_rng(_SEED.value + 1)  # same for every method
  controller.after_optimizer_step(0)
  history = [dict(controller.report(), val_mse=validation_mse())]
  for step in range(1, _TRAIN_STEPS.value + 1):
    batch = batch_rng.integers(0, len(x_train), BATCH)
    adam_step(x_train[batch], y_train[batch])
    controller.after_optimizer_step(step)
    if step % _EVAL_EVERY.value == 0:
      mse = validation_mse()
      controller.observe_return(-mse)
      history.append(dict(controller.report(), val_mse=mse))
  return controller, history


def hand_over_step(history):
  """First step a circulant layer left circulant form; None if it never did."""
  if history[0]['phase'] != 'circulant':
    return None
  return next((row['learner_step'] for row in history
               if row['phase'] != 'circulant'), None)


def summary_row(method, controller, history):
  return dict(
      method=method, average_cr=controller.average_cr(),
      final_cr=history[-1]['compressed_cr'],
      final_network_cr=history[-1]['network_cr'],
      final_val_mse=history[-1]['val_mse'],
      best_val_mse=min(row['val_mse'] for row in history),
      hand_over_step=hand_over_step(history))


def plot_training(histories, block_size, out):
  plt = figures.pyplot()
  figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
  for method, history in histories.items():
    steps = [row['learner_step'] for row in history]
    left.plot(steps, [row['compressed_cr'] for row in history], label=method)
    right.plot(steps, [row['val_mse'] for row in history], label=method)
  gst = histories[f'GST (B={block_size})']
  left.plot([row['learner_step'] for row in gst],
            [row['target_sparsity'] for row in gst], 'k:',
            label='GST target sparsity')
  left.axhline(1 - 1 / block_size, color='grey', linestyle='--',
               linewidth=0.8)
  left.set(xlabel='learner step', ylabel='CR (compressed layers)',
           title='compression ratio')
  right.set(xlabel='learner step', ylabel='validation MSE', yscale='log',
            title='fit')
  left.legend()
  right.legend()
  figures.save_figure(figure, out, 'cr.png')


def main(argv):
  del argv
  block_size = _BLOCK_SIZE.value
  for flag in (_TRAIN_STEPS, _EVAL_EVERY):
    figures.positive(flag.name, flag.value)
  schedule = dict(  # the target reaches s_final at 60% of training
      block_size=block_size, s_init=0.0, s_final=_S_FINAL.value,
      begin_step=0, end_step=max(1, int(0.6 * _TRAIN_STEPS.value)),
      update_every=50, reward_window=3, reward_delta=0.2, patience=3,
      step_back=0.05, s_shift=_S_SHIFT.value)
  try:  # the knobs' own checks, before any work
    compression.make_controller('gst', [], **schedule)
  except ValueError as error:
    figures.usage_error(str(error))
  hidden = figures.parse_layers('hidden', _HIDDEN.value)
  if len(hidden) < 2 or any(width % block_size for width in hidden):
    figures.usage_error(f'--hidden={_HIDDEN.value}: want at least two widths '
                        '(a hidden->hidden layer to compress), each a '
                        f'multiple of --block_size={block_size}')
  out = figures.out_dir(_OUT.value)

  network = make_network(hidden, _SEED.value)
  figures.write_csv(out, 'layers.csv', [
      dict(layer=layer.name, kind=type(layer).__name__,
           kernel=tuple(layer.w.shape)) for layer in network.layers])
  dense, circulant = projection(network, block_size, out)
  figures.write_csv(out, 'transforms.csv', transforms(dense, circulant))

  data = regression_data(_SEED.value)
  methods = {'dense': 'none', 'iterative pruning': 'prune',
             f'GST (B={block_size})': 'gst'}
  histories, summary = {}, []
  for method, kind in methods.items():
    controller, histories[method] = train(kind, hidden, data, schedule)
    summary.append(summary_row(method, controller, histories[method]))
    print(f'{method:>20}: average CR {summary[-1]["average_cr"]:.3f}, final '
          f'validation MSE {summary[-1]["final_val_mse"]:.3f}', flush=True)
  figures.write_csv(out, 'history.csv', [
      dict(method=method, **row) for method, history in histories.items()
      for row in history])
  plot_training(histories, block_size, out)
  figures.write_csv(out, 'summary.csv', summary)


if __name__ == '__main__':
  figures.run(main)

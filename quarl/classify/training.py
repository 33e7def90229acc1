"""Supervised training with a compression controller, as the RL learners
use one.

The controller's clock is the optimizer step: its constraint runs inside
every compiled step, right after the update (so masks and circulant ties
hold for every step's weights), and its host half syncs every
`update_every` steps. GST's "return" is validation accuracy, observed once
an epoch; the test split only ever reports.

SGD with momentum, weight decay on conv and dense kernels, and the learning
rate divided by 10 at 50% and 75% of training: He et al.'s CIFAR recipe,
with its milestones as fractions of whatever budget is given.
"""
import dataclasses
import math
from typing import Callable, Optional

import numpy as np
import sonnet as snt
import tensorflow as tf

from quarl.classify import data as data_lib
from quarl.settings import setting

LR_MILESTONES = (0.5, 0.75)
EVAL_BATCH = 1000


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """He et al.'s CIFAR ResNet recipe: SGD-momentum, 160 epochs, the rate
  divided by 10 at LR_MILESTONES."""
  epochs: int = setting(160, 'Passes over the training split')
  batch_size: int = setting(128, 'Images per step')
  learning_rate: float = setting(
      0.1, 'SGD-momentum learning rate, divided by 10 at 50% and 75% of '
      'the steps')
  momentum: float = setting(0.9, 'SGD momentum')
  weight_decay: float = setting(1e-4, 'L2 on conv and dense kernels')
  seed: int = setting(
      0, 'Initialization, shuffling and augmentation seed (the digits split '
      'is fixed)')


@dataclasses.dataclass(frozen=True)
class EpochMetrics:
  epoch: int
  step: int
  train_loss: float
  train_acc: float
  val_acc: float
  test_acc: float


def steps_per_epoch(num_train: int, batch_size: int) -> int:
  return math.ceil(num_train / batch_size)


class Trainer:
  """One model, one dataset, one controller; `train_epoch()` at a time.

  The model must be built (called once) before its controller is made, as
  a controller reads and reshapes built kernels.
  """

  def __init__(self, model: snt.Module, dataset: data_lib.Dataset,
               controller, config: TrainConfig):
    self.model, self.dataset = model, dataset
    self.controller, self.config = controller, config
    self.step = int(controller.learner_step.numpy())
    self.epoch = 0
    self.total_steps = config.epochs * steps_per_epoch(len(dataset.train),
                                                       config.batch_size)
    self._rng = np.random.default_rng(config.seed)
    self._lr = tf.Variable(config.learning_rate, trainable=False,
                           name='learning_rate')
    self._optimizer = snt.optimizers.Momentum(self._lr, config.momentum)
    self._variables = model.trainable_variables
    self._kernels = [v for v in self._variables
                     if v.name.split('/')[-1].startswith('w:')]
    shape = tf.TensorSpec((None,) + tuple(dataset.image_shape), tf.float32)
    labels = tf.TensorSpec([None], tf.int32)
    self._train_step = tf.function(self._step, input_signature=[shape,
                                                                labels])
    self._count_correct = tf.function(self._correct,
                                      input_signature=[shape, labels])
    controller.constrain()  # GST is block-circulant from step 0.
    controller.sync(self.step)

  def learning_rate_at(self, step: int) -> float:
    drops = sum(step >= fraction * self.total_steps
                for fraction in LR_MILESTONES)
    return self.config.learning_rate * 0.1**drops

  def _step(self, images, labels):
    with tf.GradientTape() as tape:
      logits = self.model(images, is_training=True)
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=labels, logits=logits))
      objective = loss + self.config.weight_decay * tf.add_n(
          [tf.nn.l2_loss(kernel) for kernel in self._kernels])
    gradients = tape.gradient(objective, self._variables)
    self.controller.record_gradients(gradients, self._variables)
    self._optimizer.apply(gradients, self._variables)
    self.controller.constrain()
    correct = tf.reduce_sum(tf.cast(
        tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels),
        tf.float32))
    return loss, correct

  def _correct(self, images, labels):
    logits = self.model(images, is_training=False)
    return tf.reduce_sum(tf.cast(
        tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels),
        tf.int64))

  def train_epoch(self, on_sync: Optional[Callable[[int], None]] = None
                  ) -> EpochMetrics:
    """One pass over the shuffled training split, then validation (fed to
    the controller) and test accuracy. `on_sync(step)` follows each sync."""
    train = self.dataset.train
    order = self._rng.permutation(len(train))
    batch = self.config.batch_size
    every = self.controller.update_every
    loss_sum = correct_sum = 0.0
    for start in range(0, len(order), batch):
      index = order[start:start + batch]
      images = train.images[index]
      if self.dataset.augment:
        images = data_lib.augment_batch(images, self._rng)
      rate = self.learning_rate_at(self.step)
      if rate != float(self._lr.numpy()):
        self._lr.assign(rate)
      loss, correct = self._train_step(images, train.labels[index])
      loss_sum += float(loss) * len(index)
      correct_sum += float(correct)
      self.step += 1
      if self.step % every == 0 or self.step == self.total_steps:
        self.controller.sync(self.step)
        if on_sync:
          on_sync(self.step)
    self.epoch += 1
    val_acc = self.accuracy(self.dataset.val)
    self.controller.observe_return(val_acc)
    return EpochMetrics(epoch=self.epoch, step=self.step,
                        train_loss=loss_sum / len(order),
                        train_acc=correct_sum / len(order), val_acc=val_acc,
                        test_acc=self.accuracy(self.dataset.test))

  def accuracy(self, split: data_lib.Split) -> float:
    correct = sum(int(self._count_correct(split.images[i:i + EVAL_BATCH],
                                          split.labels[i:i + EVAL_BATCH]))
                  for i in range(0, len(split), EVAL_BATCH))
    return correct / len(split)

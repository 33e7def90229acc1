"""The CIFAR ResNet (He et al. 2016, section 4.2) with GST layers.

A 3x3 conv to 16 channels, then three stages of n basic blocks (two 3x3
convs, batch norm, identity shortcut) at 16, 32 and 64 channels, stride 2
into stages two and three, global average pooling and a dense classifier:
depth 6n + 2 (ResNet-32: n = 5, 0.46M parameters). Where a stage halves the
map, the shortcut subsamples and zero-pads channels (the paper's option A),
so shortcuts hold no weights.

GST's scope as in RL: the first conv (the input layer) and the classifier
(the output layer) stay dense; every conv inside the blocks is compressible.
Any input size works (SAME padding): CIFAR's 32x32 ends at 8x8 maps,
digits' 8x8 at 2x2.
"""
import sonnet as snt
import tensorflow as tf

from quarl.compression import layers

STAGE_CHANNELS = (16, 32, 64)
# Batch-norm running statistics follow quickly: small sets (digits: 19
# steps an epoch) would otherwise evaluate on their initial statistics.
BN_DECAY = 0.9


def blocks_per_stage(depth: int) -> int:
  """n for depth 6n + 2; raises ValueError for other depths."""
  if depth < 8 or (depth - 2) % 6:
    raise ValueError(f'a CIFAR ResNet has depth 6n + 2 (8, 14, 20, 32, 44, '
                     f'56, 110, ...), got {depth}')
  return (depth - 2) // 6


def _he_init():
  return snt.initializers.VarianceScaling(2.0, 'fan_in', 'truncated_normal')


def _batch_norm(name: str) -> snt.BatchNorm:
  return snt.BatchNorm(create_scale=True, create_offset=True,
                       decay_rate=BN_DECAY, name=name)


class BasicBlock(snt.Module):
  """conv-BN-ReLU-conv-BN, plus the shortcut, then ReLU."""

  def __init__(self, channels: int, stride: int, name: str):
    super().__init__(name=name)
    self._channels, self._stride = channels, stride
    self.conv_a = layers.CompressibleConv2D(
        channels, 3, stride=stride, with_bias=False, w_init=_he_init(),
        name='conv_a')
    self.bn_a = _batch_norm('bn_a')
    self.conv_b = layers.CompressibleConv2D(
        channels, 3, with_bias=False, w_init=_he_init(), name='conv_b')
    self.bn_b = _batch_norm('bn_b')

  def __call__(self, inputs: tf.Tensor, is_training: bool) -> tf.Tensor:
    outputs = tf.nn.relu(self.bn_a(self.conv_a(inputs), is_training))
    outputs = self.bn_b(self.conv_b(outputs), is_training)
    shortcut = inputs
    if self._stride > 1:
      shortcut = shortcut[:, ::self._stride, ::self._stride, :]
    extra = self._channels - shortcut.shape[-1]
    if extra:
      shortcut = tf.pad(shortcut, [[0, 0], [0, 0], [0, 0],
                                   [extra // 2, extra - extra // 2]])
    return tf.nn.relu(outputs + shortcut)


class CifarResNet(snt.Module):
  """Images [B, H, W, C] float -> logits [B, num_classes]."""

  def __init__(self, depth: int = 32, num_classes: int = 10,
               name: str = 'resnet'):
    super().__init__(name=name)
    per_stage = blocks_per_stage(depth)
    self.depth = depth
    self.conv_0 = snt.Conv2D(STAGE_CHANNELS[0], 3, with_bias=False,
                             w_init=_he_init(), name='conv_0')
    self.bn_0 = _batch_norm('bn_0')
    self.blocks = tuple(
        BasicBlock(channels, 2 if stage and not index else 1,
                   name=f'stage{stage + 1}_block{index + 1}')
        for stage, channels in enumerate(STAGE_CHANNELS)
        for index in range(per_stage))
    self.classifier = snt.Linear(num_classes, name='classifier')

  @property
  def compressible_layers(self) -> list:
    return [conv for block in self.blocks for conv in (block.conv_a,
                                                       block.conv_b)]

  def __call__(self, images: tf.Tensor, is_training: bool) -> tf.Tensor:
    outputs = tf.nn.relu(self.bn_0(self.conv_0(images), is_training))
    for block in self.blocks:
      outputs = block(outputs, is_training)
    return self.classifier(tf.reduce_mean(outputs, axis=[1, 2]))


def make_resnet(depth: int, image_shape, num_classes: int = 10,
                name: str = 'resnet') -> CifarResNet:
  """A built CifarResNet (its variables exist, so a controller can take it)."""
  model = CifarResNet(depth, num_classes, name=name)
  model(tf.zeros((1,) + tuple(image_shape)), is_training=False)
  return model

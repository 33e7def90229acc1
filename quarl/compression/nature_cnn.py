"""DQN's Atari torso (Mnih et al. 2015, "Nature CNN") with GST layers.

conv 32x8x8 stride 4, conv 64x4x4 stride 2, conv 64x3x3 stride 1 (VALID,
ReLU), flatten, dense 512 (ReLU): the torso OpenAI baselines' A2C and PPO
share between their heads. Agents put their dense heads on top.

GST's scope carried over to pixels: the first conv stays
dense by default (it reads raw pixels through 4 input channels, and is the
network's input layer), conv 2, conv 3 and the dense 512 are compressible,
and output heads stay dense.
"""
from typing import Sequence

import sonnet as snt
import tensorflow as tf

from quarl.compression import layers


class NatureCNNTorso(snt.Module):
  """Frames [B, H, W, C] (uint8 or float, or flattened: a TFLite policy's one
  flat float input) -> [B, 512] features; pixels are scaled to [0, 1] here."""

  def __init__(self, observation_shape: Sequence[int] = (84, 84, 4),
               dense_first: bool = True, name: str = 'nature_cnn_torso'):
    super().__init__(name=name)
    self._observation_shape = tuple(observation_shape)
    first = snt.Conv2D if dense_first else layers.CompressibleConv2D
    self.layers = (
        first(32, 8, stride=4, padding='VALID', name='conv_0'),
        layers.CompressibleConv2D(64, 4, stride=2, padding='VALID',
                                  name='conv_1'),
        layers.CompressibleConv2D(64, 3, stride=1, padding='VALID',
                                  name='conv_2'),
        layers.CompressibleLinear(512, name='linear_3'),
    )

  @property
  def compressible_layers(self) -> list:
    return [l for l in self.layers
            if isinstance(l, layers.CompressibleKernel)]

  def __call__(self, observations: tf.Tensor) -> tf.Tensor:
    outputs = tf.reshape(tf.cast(observations, tf.float32),
                         (-1,) + self._observation_shape) / 255.0
    for layer in self.layers[:3]:
      outputs = tf.nn.relu(layer(outputs))
    return tf.nn.relu(self.layers[3](snt.Flatten()(outputs)))

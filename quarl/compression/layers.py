"""Drop-in `snt.Linear` / `snt.Conv2D` that carry their own compression
constraint.

The dense kernel `w` stays the single source of truth. Compression is a
constraint re-imposed after every optimizer step (projected gradient descent):
in the circulant phase `w` is replaced by its least-squares block-circulant
projection, in the sparse phase it is multiplied by a binary mask. Learners
keep their compiled step untouched; a controller calls `apply_constraint()`.

All compression state (phase, block pattern, mask) lives in non-trainable
tf.Variables on the layer, so tf.train.Checkpoint saves and restores it and
the in-graph constraint picks its branch from variable values (changing phase
never retraces).

Structure is defined on a 2-D *matrix view* of the kernel, so the circulant
maths, masks and TFMOT's block pooling serve every layer type unchanged: a
dense kernel [in, out] is its own view; a conv kernel [kh, kw, in, out] is
viewed as [in, kh * kw * out], whose BxB groups are (input, output) channel
blocks of one spatial tap as long as out is a multiple of every B.
"""
from typing import Iterable, Optional, Sequence

import numpy as np
import sonnet as snt
import tensorflow as tf

from quarl.compression import circulant
from quarl.compression import masks
from quarl.compression import sonnet_compat
from quarl.compression import transforms

sonnet_compat.repair_conv()

DENSE, CIRCULANT, SPARSE = 'dense', 'circulant', 'sparse'
PHASES = (DENSE, CIRCULANT, SPARSE)

# (block size, block4-friendly) per pattern index; one int variable selects it.
_PATTERN_KEYS = ((2, False), (4, False), (8, False), (2, True))


def _tie_pattern(key) -> circulant.TiePattern:
  block_size, friendly = key
  if friendly:
    return transforms.friendly_b2_pattern()
  return circulant.circulant_pattern(block_size)


_PATTERNS = tuple(_tie_pattern(key) for key in _PATTERN_KEYS)


class CompressibleKernel:
  """A Sonnet layer's kernel `w` held block-circulant or masked sparse.

  Mixed in before the Sonnet layer. Starts dense with block size 4.
  Variables are created on the first call, exactly as for the Sonnet layer;
  phase changes requested earlier are honoured then (the initial kernel is
  projected at build time). Besides the trainable `w`/`b`, `.variables`
  holds three non-trainable ones (phase, pattern, mask).
  """

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self._phase = tf.Variable(PHASES.index(DENSE), trainable=False,
                              name='phase')
    self._pattern = tf.Variable(_PATTERN_KEYS.index((4, False)),
                                trainable=False, name='pattern')

  def _to_matrix(self, kernel):
    """The kernel's matrix view (a dense layer's kernel is its own)."""
    return kernel

  def _from_matrix(self, matrix):
    """Inverse of `_to_matrix`."""
    return matrix

  def kernel_matrix(self) -> tf.Tensor:
    """`w` as the 2-D matrix whose BxB groups the layer compresses."""
    return self._to_matrix(self.w.read_value())

  def matrix_view(self, kernel_shaped) -> tf.Tensor:
    """Any kernel-shaped tensor (a gradient, the mask) as its matrix view."""
    return self._to_matrix(kernel_shaped)

  def set_kernel_matrix(self, matrix) -> None:
    """Sets `w` from its matrix view (no constraint applied)."""
    self.w.assign(self._from_matrix(tf.cast(matrix, self.w.dtype)))

  @snt.once
  def _initialize(self, inputs: tf.Tensor):
    super()._initialize(inputs)
    self.mask = tf.Variable(tf.ones(self.w.shape, self.w.dtype),
                            trainable=False, name='mask')
    # A dense layer needs no constraint; skipping it keeps eager builds off
    # tf.switch_case, which TF 2.8 can crash on when several threads build
    # networks at once (Launchpad's local_mt runs every node as a thread).
    if not tf.executing_eagerly() or self.phase != DENSE:
      self.apply_constraint()

  @property
  def built(self) -> bool:
    return hasattr(self, 'mask')

  @property
  def phase(self) -> str:
    return PHASES[int(self._phase.numpy())]

  @property
  def block_size(self) -> int:
    return _PATTERN_KEYS[int(self._pattern.numpy())][0]

  @property
  def friendly(self) -> bool:
    return _PATTERN_KEYS[int(self._pattern.numpy())][1]

  @property
  def pattern_cr(self) -> float:
    """Nominal CR of the current block pattern held circulant (1 - 1/B;
    3 numbers per 4x4 group in the block4-friendly form)."""
    pattern = _PATTERNS[int(self._pattern.numpy())]
    return 1.0 - pattern.num_tied / pattern.size**2

  def apply_constraint(self) -> None:
    """Re-imposes the current phase's structure on `w`; tf.function-safe."""
    self.w.assign(tf.switch_case(self._phase.read_value(), [
        self.w.read_value,
        lambda: self._from_matrix(self._circulant_matrix()),
        lambda: self.w * self.mask,
    ]))

  def _circulant_matrix(self) -> tf.Tensor:
    return tf.switch_case(self._pattern.read_value(), [
        lambda pattern=pattern: circulant.project_dense(self.kernel_matrix(),
                                                        pattern)
        for pattern in _PATTERNS
    ])

  def to_circulant(self, block_size: int) -> float:
    """Enters the circulant phase; returns the projection's weight shift."""
    self._set_pattern(block_size, friendly=False)
    self._phase.assign(PHASES.index(CIRCULANT))
    return self._constrain_now()

  def set_block_size(self, block_size: int, friendly: bool = False) -> float:
    """Changes B (re-projecting now if circulant); returns the weight shift.

    `friendly=True` (B=2 only) keeps the layer in the block4-friendly B2 form,
    so a later move to B=4 is lossless. In the sparse phase B only sets the
    group size of the next mask.
    """
    self._set_pattern(block_size, friendly)
    return self._constrain_now()

  def to_sparse(self, sparsity: float, granularity: str = 'block') -> float:
    """(Re)builds the mask from current weights, applies it; returns shift."""
    self._require_built()
    return self.set_mask(masks.make_mask(self.kernel_matrix().numpy(),
                                         sparsity, self.block_size,
                                         granularity))

  def set_mask(self, mask) -> float:
    """Enters the sparse phase with a mask built elsewhere (e.g. by TFMOT's
    pruning), shaped as the kernel or as its matrix view; returns the weight
    shift of applying it."""
    self._require_built()
    mask = tf.cast(mask, self.mask.dtype)
    if mask.shape != self.mask.shape:
      mask = self._from_matrix(mask)
    self.mask.assign(mask)
    self._phase.assign(PHASES.index(SPARSE))
    return self._constrain_now()

  def num_params(self) -> int:
    """Kernel entries (the bias is never compressed and is counted as dense)."""
    self._require_built()
    return int(np.prod(self.w.shape))

  def stored_params(self) -> int:
    """Numbers the current phase needs to store the kernel."""
    return int(self.stored_params_tensor().numpy())

  def stored_params_tensor(self) -> tf.Tensor:
    """`stored_params` as an int64 tensor, so controllers account in-graph."""
    self._require_built()
    matrix_shape = self.kernel_matrix().shape
    circulant_counts = tf.constant(
        [circulant.stored_count(matrix_shape, p) for p in _PATTERNS], tf.int64)
    return tf.switch_case(self._phase.read_value(), [
        lambda: tf.constant(self.num_params(), tf.int64),
        lambda: tf.gather(circulant_counts, self._pattern),
        lambda: tf.math.count_nonzero(self.mask, dtype=tf.int64),
    ])

  def compression_ratio(self) -> float:
    """1 - stored/entries: 0 dense, 1 - 1/B circulant, sparsity when pruned."""
    return 1.0 - self.stored_params() / self.num_params()

  def _set_pattern(self, block_size: int, friendly: bool) -> None:
    circulant.check_block_size(block_size)
    if friendly and block_size != 2:
      raise ValueError(
          f'block4-friendly form is a B=2 form, got B={block_size}')
    self._pattern.assign(_PATTERN_KEYS.index((block_size, friendly)))

  def _constrain_now(self) -> float:
    if not self.built:
      return 0.0
    before = self.w.numpy()
    self.apply_constraint()
    return transforms.weight_shift(before, self.w.numpy())

  def _require_built(self) -> None:
    if not self.built:
      raise ValueError(f'{self.name} has no kernel yet: call it once (e.g. '
                       'acme.tf.utils.create_variables) before compressing it')


class CompressibleLinear(CompressibleKernel, snt.Linear):
  """snt.Linear whose kernel [in, out] can be held block-circulant or sparse."""

  def __init__(self,
               output_size: int,
               with_bias: bool = True,
               w_init: Optional[snt.initializers.Initializer] = None,
               b_init: Optional[snt.initializers.Initializer] = None,
               name: Optional[str] = None):
    super().__init__(output_size, with_bias=with_bias, w_init=w_init,
                     b_init=b_init, name=name)


class CompressibleConv2D(CompressibleKernel, snt.Conv2D):
  """snt.Conv2D whose kernel is compressed tap by tap.

  For every spatial tap the [in, out] channel matrix is held block-circulant
  over BxB (input, output) channel blocks, or group-pruned over the same
  blocks (one global budget over all taps). Output channels must be a
  multiple of every block size (8) so no block straddles two taps.
  Arguments are snt.Conv2D's.
  """

  def __init__(self, output_channels: int, kernel_shape, **kwargs):
    block = max(circulant.BLOCK_SIZES)
    if output_channels % block:
      raise ValueError(f'a compressible conv needs output channels in '
                       f'multiples of {block}, got {output_channels}')
    super().__init__(output_channels, kernel_shape, **kwargs)

  def _to_matrix(self, kernel):
    height, width, inputs, outputs = kernel.shape
    return tf.reshape(tf.transpose(kernel, [2, 0, 1, 3]),
                      [inputs, height * width * outputs])

  def _from_matrix(self, matrix):
    height, width, inputs, outputs = self.w.shape
    return tf.transpose(tf.reshape(matrix, [inputs, height, width, outputs]),
                        [1, 2, 0, 3])


class CompressibleMLP(snt.Module):
  """Linear layers with an activation between them, like snt.nets.MLP."""

  def __init__(self, layers: Sequence[snt.Module], activation=tf.nn.relu,
               activate_final: bool = False, name: Optional[str] = None):
    super().__init__(name=name)
    self.layers = tuple(layers)
    self._activation = activation
    self._activate_final = activate_final

  @property
  def compressible_layers(self) -> list:
    return [l for l in self.layers if isinstance(l, CompressibleKernel)]

  def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
    outputs = inputs
    last = len(self.layers) - 1
    for index, layer in enumerate(self.layers):
      outputs = layer(outputs)
      if index < last or self._activate_final:
        outputs = self._activation(outputs)
    return outputs


def make_compressible_mlp(output_sizes: Sequence[int],
                          w_init: Optional[snt.initializers.Initializer] = None,
                          b_init: Optional[snt.initializers.Initializer] = None,
                          with_bias: bool = True,
                          activation=tf.nn.relu,
                          activate_final: bool = False,
                          dense_first: bool = True,
                          dense_last: bool = True,
                          name: str = 'mlp') -> CompressibleMLP:
  """MLP whose first/last layers are plain snt.Linear and the rest compressible.

  GST keeps input and output layers dense; pass `dense_last=False` when a
  separate head follows the MLP so its last hidden layer is compressed too.
  """
  last = len(output_sizes) - 1

  def make_layer(index, size):
    dense = (index == 0 and dense_first) or (index == last and dense_last)
    layer_type = snt.Linear if dense else CompressibleLinear
    return layer_type(size, with_bias=with_bias, w_init=w_init, b_init=b_init,
                      name=f'linear_{index}')

  with tf.name_scope(name):
    layers = [make_layer(i, size) for i, size in enumerate(output_sizes)]
  return CompressibleMLP(layers, activation, activate_final, name=name)


def dense_param_count(modules: Iterable[snt.Module],
                      layers: Iterable[CompressibleKernel]) -> int:
  """Trainable parameters of `modules` outside the compressible kernels.

  This is what a controller needs (`dense_params`) to report whole-network CR.
  """
  total = sum(int(np.prod(v.shape)) for module in modules
              for v in module.trainable_variables)
  return total - sum(layer.num_params() for layer in layers)

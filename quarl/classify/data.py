"""Image-classification data: scikit-learn's bundled digits, or CIFAR-10
from a copy already on disk (nothing is downloaded).

Every set comes as train / validation / test splits of float32 NHWC images,
standardized per channel with the training split's statistics. Validation
is what GST's reward-aware clock reads, so the test split is never seen
before it is reported.
"""
import dataclasses
import os
import pickle

import numpy as np

CIFAR_TRAIN_FILES = tuple(f'data_batch_{i}' for i in range(1, 6))
CIFAR_TEST_FILE = 'test_batch'
CIFAR_DIR = 'cifar-10-batches-py'  # What the official tarball unpacks to.
CIFAR_SIDE, CIFAR_CHANNELS = 32, 3
# Fixed digits split (train / val / test of 1,797), the same for every seed.
DIGITS_SPLIT_SEED = 0
DIGITS_VAL, DIGITS_TEST = 300, 300
# CIFAR-10's validation split: the last tenth of the training batches.
CIFAR_VAL_FRACTION = 0.1
DATA_KINDS = ('digits', 'cifar10:PATH')
NUM_CLASSES = 10  # Both sets: digits 0-9, CIFAR-10's classes.


class DataError(ValueError):
  """The data asked for cannot be read; the message is one line."""


@dataclasses.dataclass(frozen=True)
class Split:
  images: np.ndarray  # float32 [N, H, W, C]
  labels: np.ndarray  # int32 [N]

  def __len__(self) -> int:
    return len(self.labels)


@dataclasses.dataclass(frozen=True)
class Dataset:
  name: str
  train: Split
  val: Split
  test: Split
  num_classes: int
  # Pad-4 random crops and horizontal flips of training batches (CIFAR's
  # standard augmentation; a flipped digit is another digit, so not there).
  augment: bool

  @property
  def image_shape(self):
    return self.train.images.shape[1:]


def load(spec: str) -> Dataset:
  """'digits' or 'cifar10:PATH'; raises DataError."""
  if spec == 'digits':
    return load_digits()
  kind, _, path = spec.partition(':')
  if kind == 'cifar10' and path:
    return load_cifar10(path)
  raise DataError(f'--data={spec!r}: want one of {", ".join(DATA_KINDS)}')


def load_digits() -> Dataset:
  """scikit-learn's 1,797 8x8 digits (shipped inside the wheel)."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  digits = datasets.load_digits()
  images = digits.images.astype(np.float32)[..., None]
  labels = digits.target.astype(np.int32)
  order = np.random.RandomState(DIGITS_SPLIT_SEED).permutation(len(labels))
  test = order[:DIGITS_TEST]
  val = order[DIGITS_TEST:DIGITS_TEST + DIGITS_VAL]
  train = order[DIGITS_TEST + DIGITS_VAL:]
  return _standardized('digits', images, labels, train, val, test,
                       augment=False)


def read_cifar_batch(path: str):
  """One python-pickle CIFAR-10 batch -> (uint8 [N, 32, 32, 3], int32 [N]).

  A batch is a dict with b'data', uint8 [N, 3072] (each row the red, green
  then blue 32x32 planes, row-major), and b'labels', N ints in 0..9.
  """
  try:
    with open(path, 'rb') as handle:
      batch = pickle.load(handle, encoding='bytes')
    data = np.asarray(batch[b'data'], np.uint8)
    labels = np.asarray(batch[b'labels'], np.int32)
  except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError,
          ValueError, AttributeError) as error:
    raise DataError(f'{path} is not a CIFAR-10 python batch: '
                    f'{type(error).__name__}: {error}') from error
  side, channels = CIFAR_SIDE, CIFAR_CHANNELS
  if data.ndim != 2 or data.shape[1] != side * side * channels or (
      len(labels) != len(data)):
    raise DataError(f'{path} is not a CIFAR-10 python batch: data '
                    f'{data.shape}, {len(labels)} labels (want [N, 3072] '
                    'and N labels)')
  if len(labels) and not 0 <= labels.min() <= labels.max() < NUM_CLASSES:
    raise DataError(f'{path}: labels outside 0..9')
  images = data.reshape(-1, channels, side, side).transpose(0, 2, 3, 1)
  return images, labels


def load_cifar10(path: str) -> Dataset:
  """The standard batches under `path` (cifar-10-batches-py or its parent)."""
  path = os.path.expanduser(path)
  if os.path.isdir(os.path.join(path, CIFAR_DIR)):
    path = os.path.join(path, CIFAR_DIR)
  if not os.path.isdir(path):
    raise DataError(f'--data=cifar10:{path}: no such directory (want the '
                    'unpacked python version, cifar-10-batches-py)')
  missing = [name for name in CIFAR_TRAIN_FILES + (CIFAR_TEST_FILE,)
             if not os.path.isfile(os.path.join(path, name))]
  if missing:
    raise DataError(f'--data=cifar10:{path}: missing {", ".join(missing)} '
                    '(want the python-pickle batches data_batch_1..5 and '
                    'test_batch)')
  parts = [read_cifar_batch(os.path.join(path, name))
           for name in CIFAR_TRAIN_FILES + (CIFAR_TEST_FILE,)]
  images = np.concatenate([p[0] for p in parts]).astype(np.float32)
  labels = np.concatenate([p[1] for p in parts])
  num_test = len(parts[-1][1])
  num_train = len(labels) - num_test
  num_val = int(round(num_train * CIFAR_VAL_FRACTION))
  if num_train - num_val < 1 or num_val < 1 or num_test < 1:
    raise DataError(f'--data=cifar10:{path}: {num_train} training and '
                    f'{num_test} test images are too few to split')
  index = np.arange(len(labels))
  return _standardized('cifar10', images, labels,
                       index[:num_train - num_val],
                       index[num_train - num_val:num_train],
                       index[num_train:], augment=True)


def _standardized(name, images, labels, train, val, test,
                  augment: bool) -> Dataset:
  mean = images[train].mean(axis=(0, 1, 2))
  std = images[train].std(axis=(0, 1, 2)) + 1e-6
  scaled = ((images - mean) / std).astype(np.float32)
  split = lambda index: Split(scaled[index], labels[index])  # pylint: disable=unnecessary-lambda-assignment
  return Dataset(name, split(train), split(val), split(test),
                 num_classes=NUM_CLASSES, augment=augment)


def augment_batch(images: np.ndarray, rng: np.random.Generator,
                  pad: int = 4) -> np.ndarray:
  """Random pad-`pad` crops and horizontal flips, one draw per image."""
  count, height, width, _ = images.shape
  padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
  rows = rng.integers(0, 2 * pad + 1, count)
  cols = rng.integers(0, 2 * pad + 1, count)
  flips = rng.random(count) < 0.5
  out = np.empty_like(images)
  for i in range(count):
    crop = padded[i, rows[i]:rows[i] + height, cols[i]:cols[i] + width]
    out[i] = crop[:, ::-1] if flips[i] else crop
  return out

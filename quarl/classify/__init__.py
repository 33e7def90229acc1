"""GST beyond RL: a supervised image classifier trained under a compression
controller (the paper's CIFAR-10 ResNet-32 row; digits for a small run).

`launch.classify` is the command line; this package holds the data readers,
the CIFAR ResNet and the training loop, and never imports `launch`.
"""
from quarl.classify.data import DataError
from quarl.classify.data import Dataset
from quarl.classify.data import Split
from quarl.classify.data import load
from quarl.classify.data import read_cifar_batch
from quarl.classify.resnet import CifarResNet
from quarl.classify.resnet import blocks_per_stage
from quarl.classify.resnet import make_resnet
from quarl.classify.training import EpochMetrics
from quarl.classify.training import TrainConfig
from quarl.classify.training import Trainer
from quarl.classify.training import steps_per_epoch

__all__ = [
    'CifarResNet', 'DataError', 'Dataset', 'EpochMetrics', 'Split',
    'TrainConfig', 'Trainer', 'blocks_per_stage', 'load', 'make_resnet',
    'read_cifar_batch', 'steps_per_epoch',
]

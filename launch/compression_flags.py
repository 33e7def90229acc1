"""The `--compression.*` flags (CompressionConfig's fields), defined once
for every entry point that trains a compressible network: launch.train's
RL learners and launch.classify."""
import dataclasses

from launch import settings
from quarl.compression.config import CompressionConfig

FLAGS = settings.define(CompressionConfig, prefix='compression.')


def compression_config(**entry_point_defaults) -> CompressionConfig:
  """CompressionConfig of the flags given; the others take the entry
  point's defaults where it has its own (launch.classify's schedule), else
  the dataclass's."""
  return dataclasses.replace(CompressionConfig(), **{
      **entry_point_defaults, **FLAGS.given()})

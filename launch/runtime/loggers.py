"""Node loggers: CSV under run_dir plus TensorBoard summaries, time-filtered."""
import os

from acme.utils import loggers
from acme.utils.loggers import tf_summary

from launch.runtime import run_dir as run_dir_lib


def make_logger(run_dir: str, label: str,
                time_delta_s: float = 10.0) -> loggers.Logger:
  """run_dir/logs/<label>/logs.csv and TensorBoard run_dir/tensorboard."""
  # flush_every=1: the time filter already throttles writes, and a node's
  # hard exit at shutdown must not lose buffered rows.
  csv_logger = loggers.CSVLogger(run_dir, label=label, add_uid=False,
                                 flush_every=1)
  summary = tf_summary.TFSummaryLogger(
      os.path.join(run_dir, run_dir_lib.TENSORBOARD_DIR),
                                    label=label, steps_key=f'{label}_steps')
  return loggers.TimeFilter(
      loggers.Dispatcher([csv_logger, summary], serialize_fn=None),
      time_delta_s)

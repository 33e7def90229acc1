"""Counter node: the program's step counts, kept across a resume."""
import os

from acme.utils import counting

from launch.runtime import run_dir as run_dir_lib
from launch.runtime import saved_state
from launch.config import RunConfig
from launch.nodes import common
from launch.nodes import threads



class CounterNode(counting.Counter):
  """Acme's counter; saves its counts when the run stops (after every other
  node has flushed into it) and starts from them under --resume."""

  def __init__(self, config: RunConfig):
    super().__init__()
    threads.apply(config, 'counter')
    common.record_cpu_time(config, 'counter')
    self._path = common.run_path(config, run_dir_lib.COUNTS_JSON)
    if config.resume and os.path.exists(self._path):
      # The launcher read it back before starting anything; damaged since,
      # it is named rather than a JSON traceback.
      self.increment(**saved_state.read_counts(self._path))
    common.exit_after_stop(config, before_exit=self.save, service=True)

  def save(self) -> None:
    os.makedirs(os.path.dirname(self._path), exist_ok=True)
    run_dir_lib.write_json_atomic(self._path, self.get_counts())

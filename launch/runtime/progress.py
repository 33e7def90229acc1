"""Live progress for a running program, read from the run directory's CSVs
(the launcher holds no handle on the nodes' state, and needs none)."""
import os
import threading
import time

from launch.runtime import run_dir as run_dir_lib
from launch.runtime import saved_state
from launch.runtime import summary
from launch.config import RunConfig
from launch.nodes import common

PERIOD_S = 10.0


class ProgressReporter:

  def __init__(self, config: RunConfig, period_s: float = PERIOD_S):
    self._config = config
    self._period_s = period_s
    self._stop = threading.Event()
    self._started = time.time()

  def line(self) -> str:
    config = self._config
    read = lambda name: run_dir_lib.read_csv(  # pylint: disable=unnecessary-lambda-assignment
        os.path.join(config.run_dir, name))
    evaluations = read(run_dir_lib.EVALUATOR_CSV)
    publishes = [r for r in read(run_dir_lib.QUANTIZER_CSV)
                 if int(r['version']) >= 0]
    elapsed = common.wall_time_s(config)
    parts = [f'[progress] {elapsed:5.0f}/{config.max_seconds:.0f}s']
    if evaluations:
      last = evaluations[-1]
      parts += [f"actor_steps={int(float(last['actor_steps']))}",
                f"learner_steps={int(float(last['learner_steps']))}",
                f"return={float(last['episode_return']):.1f}",
                f"best={max(float(r['episode_return']) for r in evaluations):.1f}"]
    else:
      parts.append('waiting for the first evaluation')
    if config.quantized:
      parts.append(f'publishes={len(publishes)}')
    missed = saved_state.replay_saves_missed(config.run_dir,
                                             since=self._started)
    if missed:
      parts.append(f'replay_saves_missed={missed}')
    startup = read(run_dir_lib.STARTUP_CSV)
    for group in ('actor', 'learner'):
      first = summary.first_step_s(startup, group)
      if first is not None:
        parts.append(f'first_{group}_step={first:.0f}s')
    return ' '.join(parts)

  def loop(self) -> None:
    while not self._stop.wait(self._period_s):
      print(self.line(), flush=True)

  def stop(self) -> None:
    self._stop.set()

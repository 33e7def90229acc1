"""Runs launch.train once per configuration, one after another, with
progress (run i of N, elapsed, ETA). Each run is its own process: Launchpad
keeps global launch state, so programs are not launched twice in one.

A Ctrl-C (or SIGTERM/SIGHUP) of the sweep reaches the running child once,
as the interrupt its launcher handles (it saves and writes its summary), and
the sweep waits for it; the child also dies with the sweep (a parent-death
signal), so a killed sweep leaves no run behind.

`background` runs every child at Linux's idle scheduling class (SCHED_IDLE,
inherited by its nodes and their threads): the sweep then takes only CPU
nothing else wants, so a long sweep can share a machine with timing
measurements and tests. A nice-19 sweep is not enough: under the EEVDF
scheduler it still delays the latency-bound Reverb and Courier calls of
whatever runs beside it."""
import dataclasses
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable, List, Optional, Sequence

from launch.config import RunConfig
from launch.runtime import forkserver
from launch.runtime import handoff
from launch.runtime import resume as resume_lib
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import supervisor

# How long an interrupted child may take to save and write its summary.
CHILD_STOP_TIMEOUT_S = 180.0

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def run_all(configs: Sequence[RunConfig], log=print,
            after_each: Optional[Callable[[int], None]] = None,
            background: bool = False) -> List[int]:
  """Runs launch.train on each resolved config (handed over as data, never
  as argv: launch/runtime/handoff.py); returns the exit codes.

  A completed run is skipped and an interrupted one continues (--resume;
  one that saved no state starts over), so a sweep stopped midway picks up
  where it stopped. `after_each(index)` follows every run, skipped or not.
  """
  codes = []
  start = time.time()
  executed = 0  # Runs actually launched: skipped ones say nothing of pace.
  for index, config in enumerate(configs):
    run_dir = os.path.abspath(config.run_dir)  # The child runs in ROOT.
    elapsed = time.time() - start
    eta = (elapsed / executed * (len(configs) - index)) if executed else None
    log(f'[sweep] run {index + 1}/{len(configs)}: {run_dir}  elapsed '
        f'{elapsed / 60:.1f} min' + (f', ETA {eta / 60:.1f} min' if eta
                                     else ''))
    status = run_dir_lib.finished_status(run_dir)
    if status == 'completed':
      log('[sweep]   already done, skipped')
      codes.append(0)
      if after_each:
        after_each(index)
      continue
    # A run that stopped before saving its state starts over.
    resume = resume_lib.missing_state(run_dir) is None
    executed += 1
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    with open(os.path.join(os.path.dirname(run_dir),
                           os.path.basename(run_dir) + '.log'), 'a') as out:
      code = _run_child(
          dataclasses.replace(config, run_dir=run_dir, resume=resume,
                              overwrite=not resume),
          out, background)
    codes.append(code)
    if code:
      log(f'[sweep]   exit code {code}; see {run_dir}.log')
    if after_each:
      after_each(index)
  log(f'[sweep] done in {(time.time() - start) / 60:.1f} min')
  return codes


def child_setup(background: bool) -> None:
  """preexec_fn of every run: dies with the sweep and, in the background,
  runs at the idle scheduling class."""
  forkserver.die_with_parent()
  if background:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def _run_child(config: RunConfig, out, background: bool) -> int:
  """Runs one launch.train of `config` to its end; an interrupt of the
  sweep is relayed to it as SIGINT, waited for, then raised
  (KeyboardInterrupt)."""
  # config.json records the sweep's command line: what made this run.
  process = handoff.start(
      [sys.executable, '-m', 'launch.train'], (config, list(sys.argv)),
      cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
      stdin=subprocess.DEVNULL, start_new_session=True,  # Ctrl-C: ours.
      preexec_fn=functools.partial(child_setup, background))
  interrupted = []

  def relay(signum, frame):
    del frame
    if not interrupted:
      interrupted.append(signum)
      process.send_signal(signal.SIGINT)

  previous = supervisor.install_signal_handlers(
      {signum: relay for signum in (signal.SIGINT, signal.SIGTERM,
                                    signal.SIGHUP)})
  kill_at = None
  try:
    while True:
      try:
        code = process.wait(timeout=1.0)
        break
      except subprocess.TimeoutExpired:
        if interrupted and kill_at is None:
          kill_at = time.monotonic() + CHILD_STOP_TIMEOUT_S
        if kill_at and time.monotonic() > kill_at:
          process.kill()
  finally:
    supervisor.install_signal_handlers(previous)
  if interrupted:
    raise KeyboardInterrupt(f'sweep interrupted; the run stopped with exit '
                            f'code {code}')
  return code


def record(run_dir: str, destination: str, names: Sequence[str],
           commit_message: Optional[str], log=print,
           refresh: Callable[[], Sequence[str]] = lambda: ()) -> None:
  """Copies a completed run's small files (`names`) to `destination` and,
  given a message, commits them; an incomplete run is left to be resumed.
  A sweep that records each run as it ends resumes from a checkout.
  `refresh` rewrites what is derived from the recorded runs (the tables)
  and returns those paths, committed with the run so no commit leaves a
  table stale."""
  if run_dir_lib.finished_status(run_dir) != 'completed':
    return
  os.makedirs(destination, exist_ok=True)
  copied = []
  for name in names:
    source, kept = os.path.join(run_dir, name), os.path.join(destination,
                                                             name)
    if os.path.exists(source):
      if not os.path.samefile(run_dir, destination):
        shutil.copyfile(source, kept)
      copied.append(kept)
  derived = list(refresh())
  if commit_message:
    _commit(copied + derived, commit_message, log)


def tables_in(results_dir: str) -> List[str]:
  """A results directory's tables (the files at its top) and plots (in
  plots/), not its runs."""
  paths = []
  for directory in (results_dir, os.path.join(results_dir, 'plots')):
    if os.path.isdir(directory):
      paths += [os.path.join(directory, name) for name in sorted(
          os.listdir(directory)) if os.path.isfile(os.path.join(directory,
                                                                 name))]
  return paths


def _commit(paths: List[str], message: str, log) -> None:
  """Commits exactly `paths` (others' staged changes are left alone)."""
  top = os.path.dirname(paths[0])
  for command in (['git', 'add', '--', *paths],
                  ['git', 'commit', '-q', '-m', message, '--', *paths]):
    result = subprocess.run(command, cwd=top, capture_output=True, text=True,
                            timeout=60, check=False)
    if result.returncode:
      log(f'[sweep] could not commit {message!r}: '
          f'{result.stderr.strip() or result.stdout.strip()}')
      return

"""Runs launch.train once per configuration, one after another, with
progress (run i of N, elapsed, ETA). Each run is its own process: Launchpad
keeps global launch state, so programs are not launched twice in one."""
import json
import os
import subprocess
import sys
import time
from typing import List, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_all(commands: Sequence[List[str]], run_dirs: Sequence[str],
            log=print) -> List[int]:
  """Runs `python -m launch.train <args>` for each entry; returns exit codes.

  A completed run is skipped and an interrupted one continues (--resume),
  so a sweep stopped midway picks up where it stopped.
  """
  codes = []
  start = time.time()
  executed = 0  # Runs actually launched: skipped ones say nothing of pace.
  for index, (args, run_dir) in enumerate(zip(commands, run_dirs)):
    elapsed = time.time() - start
    eta = (elapsed / executed * (len(commands) - index)) if executed else None
    log(f'[sweep] run {index + 1}/{len(commands)}: {run_dir}  elapsed '
        f'{elapsed / 60:.1f} min' + (f', ETA {eta / 60:.1f} min' if eta
                                     else ''))
    status = _status(run_dir)
    if status == 'completed':
      log('[sweep]   already done, skipped')
      codes.append(0)
      continue
    resume = status is not None or os.path.isdir(
        os.path.join(run_dir, 'checkpoints', 'learner'))
    executed += 1
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    with open(os.path.join(os.path.dirname(run_dir),
                           os.path.basename(run_dir) + '.log'), 'a') as out:
      process = subprocess.run(
          [sys.executable, '-m', 'launch.train', *args,
           f'--run_dir={run_dir}', '--resume' if resume else '--overwrite'],
          cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False)
    codes.append(process.returncode)
    if process.returncode:
      log(f'[sweep]   exit code {process.returncode}; see {run_dir}.log')
  log(f'[sweep] done in {(time.time() - start) / 60:.1f} min')
  return codes


def _status(run_dir: str):
  """The run's summary status, or None before it has one."""
  path = os.path.join(run_dir, 'summary.json')
  if not os.path.exists(path):
    return None
  with open(path) as handle:
    return json.load(handle).get('status')

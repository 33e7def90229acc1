"""A run directory that fills up mid-run: the run ends as failed (exit 1)
with the reason on one line, leaves no node behind, and once space is
freed `--resume` continues from the last save that fit."""
import os
import subprocess
import sys
import time

import psutil
import pytest

from conftest import ROOT
from conftest import rows
from conftest import train_and_check_contract

pytestmark = pytest.mark.integration

FLAGS = ['--agent=d4pg', '--env=gym:Pendulum-v1', '--actor_precision=int8',
         '--num_actors=1', '--max_actor_steps=12000', '--max_seconds=400']


@pytest.fixture
def small_disk(tmp_path):
  mount = tmp_path / 'disk'
  mount.mkdir()
  subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=96m', 'tmpfs',
                  str(mount)], check=True)
  yield mount
  subprocess.run(['umount', '-l', str(mount)], check=False)


def _fill(directory):
  """Writes a ballast file until the disk is full, to the last block."""
  with open(directory / 'ballast', 'wb', buffering=0) as handle:
    for chunk in (1 << 20, 4096, 1):
      try:
        while True:
          handle.write(b'\0' * chunk)
      except OSError:
        pass


def test_full_disk_fails_the_run_then_resume_continues(small_disk):
  run_dir = small_disk / 'run'
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
  launcher = subprocess.Popen(
      [sys.executable, '-m', 'launch.train', *FLAGS, f'--run_dir={run_dir}'],
      cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
      text=True)
  try:
    deadline = time.time() + 240
    while not ((run_dir / 'checkpoints' / 'counts.json').exists() and
               len(rows(run_dir / 'evaluator.csv')) >= 2):
      assert time.time() < deadline and launcher.poll() is None
      time.sleep(0.5)
    nodes = psutil.Process(launcher.pid).children(recursive=True)
    _fill(small_disk)
    output, _ = launcher.communicate(timeout=300)
  finally:
    if launcher.poll() is None:
      launcher.kill()
  assert launcher.returncode == 1, output[-3000:]
  # Either a save hits ENOSPC or the supervisor's free-space guard stops the
  # run first; both name the cause.
  assert 'no space left on device' in output.lower(), output[-3000:]
  assert 'Traceback' not in output.split('[progress]')[-1], output[-3000:]
  assert not any(n.is_running() and n.status() != psutil.STATUS_ZOMBIE
                 for n in nodes)

  os.remove(small_disk / 'ballast')
  summary = train_and_check_contract(run_dir, *FLAGS, '--resume')
  assert summary['actor_steps'] >= 12000

"""A quantizer that stops answering (SIGSTOP: alive, silent) is killed and
restarted by the launcher once its heartbeat is --stall_timeout_s old, an
evaluator that dies is restarted, and the run still completes on the
restarted quantizer's models."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from conftest import load_json
from conftest import rows

pytestmark = pytest.mark.integration


def test_stalled_quantizer_and_dead_evaluator_are_restarted(tmp_path):
  run_dir = tmp_path / 'run'
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
  # The actor-step budget outlasts the stall timeout and both restarts by a
  # margin: one int8 actor takes ~700 steps/s here, so a budget of 5000 was
  # spent before the stall was noticed (CI saw no restarts at all).
  launcher = subprocess.Popen(
      [sys.executable, '-m', 'launch.train', '--agent=d4pg',
       '--env=gym:Pendulum-v1', '--actor_precision=int8', '--num_actors=1',
       '--max_actor_steps=60000', '--max_seconds=400', '--stall_timeout_s=20',
       f'--run_dir={run_dir}'], cwd=ROOT, env=env, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True)
  try:
    deadline = time.time() + 240
    record = run_dir / 'node_cpu' / 'quantizer.json'
    while not (record.exists() and (run_dir / 'evaluator.csv').exists() and
               len(rows(run_dir / 'evaluator.csv')) >= 2):
      assert time.time() < deadline and launcher.poll() is None
      time.sleep(0.5)
    stalled_pid = json.loads(record.read_text())['pid']
    os.kill(stalled_pid, signal.SIGSTOP)
    evaluator = json.loads((run_dir / 'node_cpu' / 'evaluator.json')
                           .read_text())['pid']
    os.kill(evaluator, signal.SIGKILL)
    output, _ = launcher.communicate(timeout=480)
  finally:
    if launcher.poll() is None:
      launcher.kill()
  assert launcher.returncode == 0, output[-3000:]
  summary = load_json(run_dir / 'summary.json')
  assert summary['status'] == 'completed'
  assert summary['restarts_by_node'] == {'quantizer': 1, 'evaluator': 1}
  assert 'quantizer stalled (silent for' in (
      run_dir / 'node_errors.log').read_text()
  assert not os.path.exists(f'/proc/{stalled_pid}')
  publishes = rows(run_dir / 'quantizer.csv')
  # The restarted quantizer published in a new epoch (launch/nodes/quantizer).
  assert int(publishes[-1]['version']) >= 1_000_000

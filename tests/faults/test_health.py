"""A run interrupted and resumed: one baseline measurement, and energy and
node CPU counted over both segments."""
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

# Budgets are env steps (below); --max_seconds is only a backstop against a
# hang, generous for a slow machine.
FLAGS = ('--agent=d4pg', '--env=gym:Pendulum-v1', '--actor_precision=int8',
         '--num_actors=1', '--max_seconds=900')
# The first segment's budget is one no machine finishes before two
# evaluations (a fast one once completed 4,000 steps first); the resume
# extends it by RESUMED_STEPS past where the interrupt left the run.
FIRST_BUDGET = '--max_actor_steps=1000000'
RESUMED_STEPS = 3000
MEASURING = 'measuring reference returns (random, zero-action)'


def _train(run_dir, *flags):
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
  return subprocess.Popen(
      [sys.executable, '-m', 'launch.train', *FLAGS, f'--run_dir={run_dir}',
       *flags], cwd=ROOT, env=env, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True)


def _wait_for_evaluations(run_dir, launcher, count, timeout_s):
  deadline = time.time() + timeout_s
  path = run_dir / 'evaluator.csv'
  while not (path.exists() and len(rows(path)) >= count):
    assert launcher.poll() is None, launcher.communicate()[0][-3000:]
    assert time.time() < deadline, f'fewer than {count} evaluations'
    time.sleep(0.5)


def _segment_totals(run_dir):
  """Each emissions.csv segment's last (cumulative) energy, by run_id."""
  return {row['run_id']: float(row['energy_consumed'])
          for row in rows(run_dir / 'emissions.csv')}


def test_resumed_run_keeps_baselines_and_sums_energy(tmp_path):
  run_dir = tmp_path / 'run'
  launcher = _train(run_dir, FIRST_BUDGET)
  try:
    # Seconds here are backstops against a hang, sized for a slow machine:
    # the segments' budgets are env steps.
    _wait_for_evaluations(run_dir, launcher, 2, timeout_s=300)
    launcher.send_signal(signal.SIGINT)
    first_output, _ = launcher.communicate(timeout=180)
  finally:
    if launcher.poll() is None:
      launcher.kill()
  assert MEASURING in first_output, first_output[-3000:]
  first = load_json(run_dir / 'summary.json')
  assert first['status'] == 'interrupted'
  stored = load_json(run_dir / 'baselines.json')
  assert first['baseline_returns'] == stored['returns']

  budget = first['actor_steps'] + RESUMED_STEPS
  resumed = _train(run_dir, '--resume', f'--max_actor_steps={budget}')
  try:
    second_output, _ = resumed.communicate(timeout=450)
  finally:
    if resumed.poll() is None:
      resumed.kill()
  assert MEASURING not in second_output  # Stored, not measured again.
  summary = load_json(run_dir / 'summary.json')
  assert summary['baseline_returns'] == first['baseline_returns']
  assert summary['wall_s'] >= first['wall_s']
  assert summary['status'] == 'completed'
  assert summary['actor_steps'] >= budget

  segments = _segment_totals(run_dir)
  assert len(segments) == summary['segments'] == 2
  assert summary['energy_kwh'] >= sum(segments.values()) - 1e-6
  assert summary['energy_kwh'] > first['energy_kwh'] > 0
  assert summary['co2_kg'] > first['co2_kg'] > 0
  # Every node's CPU seconds carry on from the first segment's.
  for node, seconds in first['node_cpu_seconds'].items():
    assert summary['node_cpu_seconds'][node] >= seconds, node
  assert (summary['node_cpu_seconds']['learner'] >
          first['node_cpu_seconds']['learner'])

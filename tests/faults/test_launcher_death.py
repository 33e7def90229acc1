"""A launcher killed outright takes its nodes with it and leaves a run that
resumes from its last periodic save (its counts.json lost too); a sweep's Ctrl-C reaches its running
child as an interrupt the child handles (saved state, a summary)."""
import csv
import json
import os
import signal
import subprocess
import sys
import time

import psutil

from conftest import ROOT
from conftest import train_and_check_contract

ENV = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
# Budgets are env steps (below); --max_seconds is only a backstop against a
# hang, generous for a slow machine.
FLAGS = ['--agent=d4pg', '--env=gym:Pendulum-v1', '--actor_precision=int8',
         '--num_actors=1', '--max_seconds=900']
# A budget no machine spends before the periodic save the kill waits for;
# the resume extends it RESUMED_STEPS past the saved count.
FIRST_BUDGET = '--max_actor_steps=1000000'
RESUMED_STEPS = 5000


def _wait_for(predicate, timeout_s):
  deadline = time.time() + timeout_s
  while time.time() < deadline:
    if predicate():
      return True
    time.sleep(0.5)
  return False


def _saved(run_dir):
  """A periodic save has ended: its checkpoint, counts and the record of
  both (written last)."""
  learner = run_dir / 'checkpoints' / 'learner'
  return ((run_dir / 'checkpoints' / 'counts.json').exists() and
          (run_dir / 'checkpoints' / 'saves.json').exists() and
          learner.exists() and any(learner.glob('*.index')))


def _alive(process):
  try:
    return process.status() != psutil.STATUS_ZOMBIE
  except psutil.NoSuchProcess:
    return False


def test_launcher_sigkill_ends_its_nodes_then_resume_completes(tmp_path):
  run_dir = tmp_path / 'run'
  launcher = subprocess.Popen(
      [sys.executable, '-m', 'launch.train', *FLAGS, FIRST_BUDGET,
       f'--run_dir={run_dir}'],
      cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    assert _wait_for(lambda: _saved(run_dir), 240), 'no periodic save'
    nodes = psutil.Process(launcher.pid).children(recursive=True)
    assert len(nodes) >= 5  # replay, counter, learner, quantizer, ...
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    assert _wait_for(lambda: not any(_alive(n) for n in nodes), 30), [
        n.cmdline()[-1:] for n in nodes if _alive(n)]
  finally:
    if launcher.poll() is None:
      launcher.kill()
  assert not (run_dir / 'summary.json').exists()
  counts = run_dir / 'checkpoints' / 'counts.json'
  saved = json.loads(counts.read_text())
  assert saved['actor_steps'] > 0 and saved['learner_steps'] > 0
  # As a power loss mid-write leaves it (seen: every node started, then
  # the counter failed the run): the resume takes the counts the learner
  # recorded with its checkpoint, read back before any node starts.
  counts.write_text('')

  budget = saved['actor_steps'] + RESUMED_STEPS
  summary = train_and_check_contract(run_dir, *FLAGS, '--resume',
                                     f'--max_actor_steps={budget}')
  resumed = summary['resumed_from']
  assert resumed['counts_from'].startswith('checkpoints/saves.json'), resumed
  assert resumed['set_aside'][0]['file'] == 'checkpoints/counts.json'
  assert resumed['replay'] in ('full', 'partly'), resumed
  # Counts went on from the periodic save, not from zero.
  assert summary['actor_steps'] >= budget
  assert summary['learner_steps'] > saved['learner_steps']
  assert 'has been successfully loaded' in (
      run_dir / 'logs' / 'nodes' / 'replay.log').read_text()
  # One history: the killed segment's rows past the restored save were set
  # aside, and the run's clock went on from its last row, not back.
  with open(run_dir / 'evaluator.csv', newline='') as handle:
    rows = list(csv.DictReader(handle))
  for column in ('wall_time_s', 'actor_steps', 'learner_steps'):
    values = [float(row[column]) for row in rows]
    assert values == sorted(values), (column, values)
  lost = list((run_dir / 'damaged').glob('*/evaluator.csv'))
  for path in lost:
    with open(path, newline='') as handle:
      lost_rows = list(csv.DictReader(handle))
    assert all(float(row['actor_steps']) > saved['actor_steps'] or
               float(row['learner_steps']) > saved['learner_steps']
               for row in lost_rows)
    assert max(float(row['wall_time_s']) for row in lost_rows) <= float(
        rows[-1]['wall_time_s'])


# A sweep of one run: its config resolved here and handed over as data.
SWEEP = '''
import sys
from launch import cli, settings
from launch.runtime import sweep
values = settings.parse_train_args(sys.argv[2:])
sweep.run_all([cli.resolve(dict(values, run_dir=sys.argv[1]))])
'''


def test_sweep_ctrl_c_interrupts_its_child_which_saves(tmp_path):
  run_dir = tmp_path / 'sweep' / 'run'
  process = subprocess.Popen(
      [sys.executable, '-c', SWEEP, str(run_dir), *FLAGS], cwd=ROOT, env=ENV,
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  try:
    evaluations = run_dir / 'evaluator.csv'
    assert _wait_for(lambda: evaluations.exists() and len(
        evaluations.read_text().splitlines()) >= 3, 240)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=240)
  finally:
    if process.poll() is None:
      process.kill()
  assert 'KeyboardInterrupt' in output, output[-2000:]
  summary = json.loads((run_dir / 'summary.json').read_text())
  assert summary['status'] == 'interrupted'
  counts = json.loads((run_dir / 'checkpoints' / 'counts.json').read_text())
  assert counts['actor_steps'] > 0

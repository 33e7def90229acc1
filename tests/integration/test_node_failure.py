"""Faults and stops: Ctrl-C, a dead actor, a dead learner, and a resume.

Behaviour under test (launch/runtime/stop.py, launch/runtime/supervisor.py): Ctrl-C ends the
run with exit 130 and resumable state; an actor that dies is restarted and
the run completes; a learner that dies stops the run as failed; --resume
continues counts, wall time and evaluations where the first run stopped.
"""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import NETWORK_FLAGS
from conftest import ROOT
from conftest import load_json
from conftest import rows

RESUMED_STEPS = 7000


def _wait_for(predicate, timeout_s):
  deadline = time.time() + timeout_s
  while time.time() < deadline:
    if predicate():
      return True
    time.sleep(1)
  return False


def _launch(run_dir, *extra):
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
  return subprocess.Popen(
      [sys.executable, '-m', 'launch.train', '--agent=d4pg',
       '--env=gym:Pendulum-v1', '--actor_precision=int8', '--num_actors=2',
       f'--run_dir={run_dir}', *NETWORK_FLAGS, *extra],
      cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
      text=True)


def _evaluations(run_dir):
  path = run_dir / 'evaluator.csv'
  return rows(path) if path.exists() else []


def _learning(run_dir):
  evaluations = _evaluations(run_dir)
  return len(evaluations) >= 2 and int(evaluations[-1]['learner_steps']) > 0


def _run_then(run_dir, extra, when, action, timeout_s=240):
  """Launches, runs `action(launcher)` once `when()` holds; (code, output)."""
  launcher = _launch(run_dir, *extra)
  try:
    assert _wait_for(when, timeout_s), 'program did not get there'
    action(launcher)
    output, _ = launcher.communicate(timeout=480)
  finally:
    if launcher.poll() is None:
      launcher.kill()
  return launcher.returncode, output


def _kill_node(run_dir, name):
  pid = json.loads((run_dir / 'node_cpu' / f'{name}.json').read_text())['pid']
  os.kill(pid, signal.SIGKILL)


def _node_running(run_dir, name):
  return (run_dir / 'node_cpu' / f'{name}.json').exists()


def test_ctrl_c_then_resume_continues_and_survives_a_dead_actor(tmp_path):
  run_dir = tmp_path / 'run'
  # Budgeted in env steps (seconds only a backstop): a first budget no
  # machine spends before the interrupt, then RESUMED_STEPS more, so the
  # resumed segment outlives its own start-up and the actor's restart.
  backstop = '--max_seconds=900'  # Against a hang only, never the budget.
  code, output = _run_then(
      run_dir, ['--max_actor_steps=1000000', backstop],
      lambda: _learning(run_dir),
      lambda launcher: launcher.send_signal(signal.SIGINT))
  assert code == 130, output[-3000:]
  first = load_json(run_dir / 'summary.json')
  assert first['status'] == 'interrupted'
  assert os.listdir(run_dir / 'checkpoints' / 'learner')
  assert (run_dir / 'emissions.csv').exists()
  counts = load_json(run_dir / 'checkpoints' / 'counts.json')
  assert counts['learner_steps'] > 0 and counts['actor_steps'] > 0
  evaluated = len(_evaluations(run_dir))
  last = _evaluations(run_dir)[-1]

  # Resume; kill an actor once the resumed run has evaluated.
  os.remove(run_dir / 'node_cpu' / 'actor_0.json')
  budget = counts['actor_steps'] + RESUMED_STEPS
  code, output = _run_then(
      run_dir, [f'--max_actor_steps={budget}', backstop, '--resume'],
      lambda: (len(_evaluations(run_dir)) > evaluated and
               _node_running(run_dir, 'actor_0')),
      lambda _: _kill_node(run_dir, 'actor_0'))
  assert code == 0, output[-3000:]
  summary = load_json(run_dir / 'summary.json')
  assert summary['status'] == 'completed'
  assert summary['restarts'] == 1
  assert summary['restarts_by_node'] == {'actor_0': 1}
  assert 'actor_0 exited with code -9; restart 1/3' in (
      run_dir / 'node_errors.log').read_text()
  resumed = _evaluations(run_dir)[evaluated:]
  # Counts, wall time and model versions go on from the first run's.
  assert float(resumed[0]['wall_time_s']) > float(last['wall_time_s'])
  assert int(resumed[0]['learner_steps']) >= int(last['learner_steps'])
  assert int(resumed[0]['actor_steps']) >= int(last['actor_steps'])
  assert summary['learner_steps'] > counts['learner_steps']
  assert summary['actor_steps'] >= budget
  # The resumed quantizer's epoch: versions above every earlier one.
  assert int(resumed[-1]['policy_version']) > int(last['policy_version'])
  # Replay came back from Reverb's checkpoint rather than empty.
  assert 'priority_table has been successfully loaded' in (
      run_dir / 'logs' / 'nodes' / 'replay.log').read_text()


def test_dead_learner_stops_the_run_as_failed(tmp_path):
  run_dir = tmp_path / 'run'
  code, output = _run_then(
      run_dir, ['--max_seconds=300'],
      lambda: len(_evaluations(run_dir)) >= 2,
      lambda _: _kill_node(run_dir, 'learner'))
  assert code == 1, output[-3000:]
  summary = load_json(run_dir / 'summary.json')
  assert summary['status'] == 'failed'
  assert 'learner exited with code -9' in summary['status_detail']
  assert summary['restarts'] == 0
  assert len(_evaluations(run_dir)) >= 2
  # Every node process has ended: nothing left behind.
  for record in (run_dir / 'node_cpu').glob('*.json'):
    pid = json.loads(record.read_text())['pid']
    assert not os.path.exists(f'/proc/{pid}') or _zombie(pid), record.name


def _zombie(pid):
  with open(f'/proc/{pid}/stat') as handle:
    return handle.read().split(')')[-1].split()[0] == 'Z'

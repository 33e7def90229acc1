"""A dead node or Ctrl-C: the program stops, nothing measured is lost."""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import ROOT
from conftest import load_json


def _wait_for(predicate, timeout_s):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(1)
    return False


def _start_and_then(run_dir, action):
    """Starts a long D4PG program, runs `action()` once it has evaluated,
    and returns (exit code, output)."""
    env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
    launcher = subprocess.Popen(
        [sys.executable, '-m', 'launch.train', '--agent=d4pg',
         '--env=gym:Pendulum-v1', '--actor_precision=int8', '--num_actors=2',
         '--max_seconds=300', f'--run_dir={run_dir}'],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        actor_file = run_dir / 'node_cpu' / 'actor_1.json'
        evaluations = run_dir / 'evaluator.csv'
        assert _wait_for(lambda: actor_file.exists() and evaluations.exists()
                         and len(evaluations.read_text().splitlines()) >= 2,
                         240), 'program did not start'
        action(launcher)
        output, _ = launcher.communicate(timeout=180)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    return launcher.returncode, output


def test_killed_actor_stops_program_and_keeps_state(tmp_path):
    run_dir = tmp_path / 'run'
    actor_file = run_dir / 'node_cpu' / 'actor_1.json'
    code, output = _start_and_then(run_dir, lambda _: os.kill(
        json.loads(actor_file.read_text())['pid'], signal.SIGKILL))
    assert code == 1, output[-3000:]
    summary = load_json(run_dir / 'summary.json')
    assert summary['status'] == 'failed'
    assert 'exited with code -9' in summary['status_detail']
    assert os.listdir(run_dir / 'checkpoints' / 'learner')  # State kept.
    assert len((run_dir / 'evaluator.csv').read_text().splitlines()) >= 2


def test_ctrl_c_stops_cleanly_with_exit_130(tmp_path):
    run_dir = tmp_path / 'run'
    code, output = _start_and_then(
        run_dir, lambda launcher: launcher.send_signal(signal.SIGINT))
    assert code == 130, output[-3000:]
    summary = load_json(run_dir / 'summary.json')
    assert summary['status'] == 'interrupted'
    assert summary['evaluations'] >= 1
    assert os.listdir(run_dir / 'checkpoints' / 'learner')
    assert (run_dir / 'emissions.csv').exists()

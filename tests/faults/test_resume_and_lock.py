"""The real CLI on run directories it must not touch: a resume with other
settings or nothing to resume, a second launch on a live run, and an
--overwrite of a directory no run made. Each refusal is exit 2 and one
line, before any node starts."""
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from launch import cli
from launch.runtime import network
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import runner

pytestmark = pytest.mark.integration

LIVE_RUN = ('--agent=dqn', '--env=gym:CartPole-v1',
            '--actor_precision=fp32_tf', '--num_actors=1',
            # A step budget; seconds only as a backstop.
            '--max_actor_steps=3000', '--max_seconds=400')
# The refusals are about run directories: on host networking, no re-exec.
REFUSED = LIVE_RUN + ('--network=host',)
ENV = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')


def _train(*flags):
    return subprocess.run([sys.executable, '-m', 'launch.train', *flags],
                          cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=180)


@pytest.fixture
def live_run(tmp_path):
    """A launcher that runs LIVE_RUN (isolated where the machine allows,
    so its lock is taken after the re-exec); killed with its nodes if the
    test leaves it running."""
    log = tmp_path / 'first.log'
    with open(log, 'w') as out:
        launcher = subprocess.Popen(
            [sys.executable, '-m', 'launch.train', *LIVE_RUN,
             *(() if network.unshare_prefix() else ('--network=host',)),
             f'--run_dir={tmp_path / "run"}'],
            cwd=ROOT, env=ENV, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    launcher.log = log
    yield launcher
    if launcher.poll() is None:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()


def _listing(path):
    """Every path under `path` with its mtime: what 'untouched' means."""
    return sorted((str(p.relative_to(path)), p.stat().st_mtime_ns)
                  for p in path.rglob('*'))


def _one_error_line(result):
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr
    lines = [line for line in result.stderr.splitlines()
             if line.startswith('train: error:')]
    assert len(lines) == 1, result.stderr
    return lines[0]


def _stopped_run(run_dir):
    """A run that stopped with its state saved, as its launcher wrote it."""
    config = cli.make_run_config(
        agent='dqn', env='gym:CartPole-v1', actor_precision='fp32_tf',
        num_actors=1, run_dir=str(run_dir), seed=0, max_seconds=30.0,
        max_actor_steps=None, publish_period='5s', eval_episodes=3,
        launch_type='local_mp', agent_overrides={})
    run_dir.mkdir()
    (run_dir / run_dir_lib.MARKER).write_text('')
    runner.write_config(config)
    (run_dir / 'checkpoints' / 'learner').mkdir(parents=True)
    (run_dir / run_dir_lib.LEARNER_INDEX).write_text(
        'model_checkpoint_path: "ckpt-1"\n')
    (run_dir / run_dir_lib.COUNTS_JSON).write_text(json.dumps(
        {'actor_steps': 1000, 'learner_steps': 10}))
    (run_dir / 'STOP').write_text('interrupted\n')  # A resume clears it.


def test_resume_with_another_setting_exits_2_and_touches_nothing(tmp_path):
    run_dir = tmp_path / 'run'
    _stopped_run(run_dir)
    before = _listing(run_dir)
    start = time.time()
    line = _one_error_line(_train(*REFUSED, f'--run_dir={run_dir}',
                                  '--resume', '--compression.kind=gst'))
    assert line == (f'train: error: --resume of {run_dir}: these settings '
                    "differ from the run's config.json: compression.kind "
                    "('none' -> 'gst')")
    assert time.time() - start < 90  # Refused before any node started.
    assert _listing(run_dir) == before


@pytest.mark.parametrize('empty', [False, True])
def test_resume_of_a_missing_or_empty_dir_exits_2(tmp_path, empty):
    run_dir = tmp_path / 'run'
    if empty:
        run_dir.mkdir()
    line = _one_error_line(_train(*REFUSED, f'--run_dir={run_dir}',
                                  '--resume'))
    missing = 'the directory is empty' if empty else 'no such directory'
    assert f'--resume of {run_dir}: nothing to resume ({missing})' in line
    assert (os.listdir(run_dir) == []) if empty else not run_dir.exists()


def test_overwrite_of_a_dir_no_run_made_exits_2_and_keeps_its_files(
        tmp_path):
    run_dir = tmp_path / 'thesis'
    run_dir.mkdir()
    (run_dir / 'chapter1.tex').write_text('irreplaceable')
    before = _listing(run_dir)
    line = _one_error_line(_train(*REFUSED, f'--run_dir={run_dir}',
                                  '--overwrite'))
    assert line == (f'train: error: --overwrite of {run_dir}: it holds files '
                    'no run wrote; not emptying it')
    assert _listing(run_dir) == before


def test_a_second_launch_on_a_live_run_exits_2_naming_the_holder(
        tmp_path, live_run):
    run_dir, first = tmp_path / 'run', live_run
    deadline = time.time() + 180
    while not (run_dir / 'config.json').exists():
        assert first.poll() is None, first.log.read_text()[-3000:]
        assert time.time() < deadline, 'the first run wrote no config.json'
        time.sleep(0.5)
    # --overwrite is the dangerous one: it would empty the live run.
    line = _one_error_line(_train(*REFUSED, f'--run_dir={run_dir}',
                                  '--overwrite'))
    assert line == (f'train: error: --run_dir {run_dir} is in use by pid '
                    f'{first.pid} on {socket.gethostname()}')
    assert first.poll() is None, 'the first run ended before the check'
    # The refusal asked nothing of the live run: no stop, unless its own
    # 3,000-step budget ran out meanwhile (its learner compiles while the
    # replay fills, so a fast machine spends it in seconds).
    stop_file = run_dir / 'STOP'
    assert (not stop_file.exists() or
            stop_file.read_text().splitlines()[0] == 'budget spent')
    assert first.wait(timeout=300) == 0, first.log.read_text()[-3000:]
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert summary['status'] == 'completed'
    with open(run_dir / 'LOCK') as handle:  # Released with its holder.
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)

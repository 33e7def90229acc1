"""Bad input to launch.train: one clear line, exit code 2, nothing started."""
import os
import subprocess
import sys

import pytest

from launch import cli
from launch import run_dir as run_dir_lib
from launch.config import PublishPeriod


def _train(*args, cwd=None):
    env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='3')
    return subprocess.run([sys.executable, '-m', 'launch.train', *args],
                          capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


@pytest.mark.parametrize('args, message', [
    (['--agent=sac'],
     "--agent='sac' is not valid; choose from: a2c, d4pg, dqn, ppo, td3"),
    (['--env=gym:Pendulm-v1'], 'did you mean: gym:Pendulum-v1'),
    (['--actor_precision=int4'],
     'choose from: fp32_tf, fp32, fp16, dynamic_int8, int8'),
    (['--num_actors=0'], '--num_actors=0 must be > 0'),
    (['--eval_every=-1'], '--eval_every=-1 must be >= 0'),
    (['--env=gym:CartPole-v1'], 'has discrete actions but --agent=d4pg'),
    # Known to gym, but its model file is one MuJoCo 3 refuses.
    (['--env=gym:Hopper-v4'], 'gym:Hopper-v4 cannot be built with the pinned '
     'gym and MuJoCo: XML Error: global coordinates no longer supported'),
])
def test_bad_flags_exit_2_with_one_line(tmp_path, args, message):
    run_dir = tmp_path / 'run'
    result = _train(f'--run_dir={run_dir}', *args)
    assert result.returncode == 2, result.stderr
    error_lines = [l for l in result.stderr.splitlines()
                   if l.startswith('train: error:')]
    assert len(error_lines) == 1 and message in error_lines[0], result.stderr
    assert not run_dir.exists()  # Nothing started, nothing written.


def test_unwritable_and_occupied_run_dirs_exit_2(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('not a directory')
    result = _train(f'--run_dir={blocker}')
    assert result.returncode == 2
    assert 'is not a directory' in result.stderr

    occupied = tmp_path / 'occupied'
    occupied.mkdir()
    (occupied / 'summary.json').write_text('{}')
    result = _train(f'--run_dir={occupied}')
    assert result.returncode == 2
    assert 'pass --overwrite' in result.stderr
    assert (occupied / 'summary.json').read_text() == '{}'  # Nothing lost.


def test_prepare_run_dir_rules(tmp_path):
    occupied = tmp_path / 'run'
    occupied.mkdir()
    (occupied / 'old.csv').write_text('x')
    with pytest.raises(run_dir_lib.RunDirError):
        run_dir_lib.prepare_run_dir(str(occupied), overwrite=False)
    assert run_dir_lib.prepare_run_dir(str(occupied), overwrite=False,
                                       resume=True) == str(occupied)
    assert (occupied / 'old.csv').exists()  # --resume keeps the run.
    run_dir_lib.prepare_run_dir(str(occupied), overwrite=True)
    assert not list(occupied.iterdir())
    if os.geteuid() != 0:  # root can write anywhere.
        locked = tmp_path / 'locked'
        locked.mkdir(mode=0o500)
        with pytest.raises(run_dir_lib.RunDirError, match='not writable'):
            run_dir_lib.prepare_run_dir(str(locked / 'run'), overwrite=False)


def test_publish_period_parsing():
    assert PublishPeriod.parse('500') == PublishPeriod(500.0, 'steps')
    assert PublishPeriod.parse('2.5s') == PublishPeriod(2.5, 'seconds')
    for bad in ('0', '-3s', 'soon', 's'):
        with pytest.raises(ValueError, match='--publish_period'):
            PublishPeriod.parse(bad)


def test_layers_parsing():
    assert cli.parse_layers('policy_layers', '256,256') == (256, 256)
    for bad in ('', '256,0', 'a,b'):
        with pytest.raises(cli.UsageError, match='--policy_layers'):
            cli.parse_layers('policy_layers', bad)


def test_help_lists_the_documented_flags():
    result = _train('--helpfull')  # absl exits 1 after printing help.
    for flag in ('agent', 'env', 'actor_precision', 'num_actors',
                 'policy_layers', 'max_seconds', 'max_actor_steps',
                 'publish_period', 'seed', 'run_dir', 'launch_type'):
        assert f'--{flag}:' in result.stdout, flag
    for boolean in ('overwrite', 'resume'):  # absl shows --[no]name.
        assert f'--[no]{boolean}:' in result.stdout, boolean


_HOSTS = '''hosts:
  h1: {address: 10.213.0.1, prefix: "ip netns exec quarl-h1"}
  h2: {address: ADDRESS2}
groups: {replay: h1, counter: h1, learner: h1, quantizer: h1, GROUPS}
'''


@pytest.mark.parametrize('address2, groups, message', [
    ('10.213.0.2', 'evaluator: h1, actor: h2, ingest: h1',
     "unknown group 'ingest'"),
    ('10.213.0.2', 'evaluator: h1', "group 'actor'"),
    ('10.213.0.1', 'evaluator: h1, actor: h2', "duplicate address"),
])
def test_bad_hosts_files_exit_2_with_nothing_started(tmp_path, address2,
                                                     groups, message):
    hosts_file = tmp_path / 'hosts.yaml'
    hosts_file.write_text(_HOSTS.replace('ADDRESS2', address2)
                          .replace('GROUPS', groups))
    run_dir = tmp_path / 'run'
    result = _train(f'--run_dir={run_dir}', '--launch_type=hosts',
                    f'--hosts={hosts_file}')
    assert result.returncode == 2, result.stderr
    error_lines = [l for l in result.stderr.splitlines()
                   if l.startswith('train: error:')]
    assert len(error_lines) == 1 and message in error_lines[0], result.stderr
    assert not run_dir.exists()


def test_hosts_flag_and_launch_type_go_together(tmp_path):
    for args in (['--launch_type=hosts'], ['--hosts=hosts.yaml']):
        result = _train(f'--run_dir={tmp_path / "run"}', *args)
        assert result.returncode == 2, result.stderr
        assert '--hosts=FILE goes with --launch_type=hosts' in result.stderr


@pytest.mark.parametrize('args, message', [
    (['--methods=dense,gst_B3'], "unknown methods ['gst_B3']; choose from"),
    (['--envs=gym:Hoper-v4'], 'did you mean: gym:Hopper-v4'),
    (['--agent=a2c', '--envs=ale:Breakot'], 'ale:Breakout'),
])
def test_reproduce_gst_rejects_bad_input_before_any_run(tmp_path, args,
                                                        message):
    out_dir = tmp_path / 'out'
    env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='3')
    result = subprocess.run(
        [sys.executable, '-m', 'launch.reproduce_gst', f'--out_dir={out_dir}',
         *args], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('reproduce_gst: error:')
    assert message in lines[0]
    assert not out_dir.exists()

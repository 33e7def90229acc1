"""Bad input to launch.train: one clear line, exit code 2, nothing started."""
import math
import os
import subprocess
import sys

import pytest

from launch import cli
from launch.runtime import capacity
from launch.runtime import run_dir as run_dir_lib
from quarl.compression.config import CompressionConfig
from launch.config import PublishPeriod


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


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
    # Started, it was still waiting for its first evaluation 169 s later.
    (['--num_actors=500', '--max_seconds=5'],
     '--num_actors=500 is more than this machine holds'),
    (['--eval_every=-1'], '--eval_every=-1 must be >= 0'),
    (['--env=gym:CartPole-v1'], 'has discrete actions but --agent=d4pg'),
    (['--td3.batch_size=256'], '--td3.batch_size is a td3 setting, but '
     '--agent=d4pg'),
    (['--d4pg.policy_layers=256,x'], "--d4pg.policy_layers='256,x': want "
     'comma-separated positive layer widths'),
    (['--d4pg.batch_size=-1'], '--d4pg.batch_size=-1 must be > 0'),
    (['--compression.kind=sparse'], "--compression.kind='sparse' is not "
     'valid'),
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
    # Emptied but for the run's own marker and the lock this process holds.
    assert sorted(os.listdir(occupied)) == [run_dir_lib.MARKER,
                                            run_dir_lib.LOCK_FILE]
    # root writes anywhere: in CI (root) this runs as nobody.
    refused = _prepare_unprivileged()
    if refused.startswith(_CANNOT_DROP):  # Bazel's sandbox: a user namespace.
        pytest.skip(refused)
    assert refused.startswith('RunDirError: --run_dir /tmp/'), refused
    assert refused.endswith('is not writable: [Errno 13] Permission denied: '
                            f"'{refused.split()[2]}'"), refused


_CANNOT_DROP = 'cannot drop to nobody here'


def _prepare_unprivileged() -> str:
    """prepare_run_dir under a read-only parent, as a user who cannot write
    there: root writes anywhere, so as root (CI) a forked child drops to
    nobody first. What it raised (or 'ok')."""
    import tempfile  # pylint: disable=g-import-not-at-top
    parent = tempfile.mkdtemp(dir='/tmp')  # nobody can reach /tmp.
    os.chmod(parent, 0o555)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # The child: never returns into pytest.
        try:
            os.close(read_end)
            try:
                if os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)
            except PermissionError as error:
                os.write(write_end, f'{_CANNOT_DROP}: {error}'.encode())
                raise
            try:
                run_dir_lib.prepare_run_dir(os.path.join(parent, 'run'),
                                            overwrite=False)
                result = 'ok'
            except run_dir_lib.RunDirError as error:
                result = f'RunDirError: {error}'
            except Exception as error:  # pylint: disable=broad-except
                result = f'{type(error).__name__}: {error}'
            os.write(write_end, result.encode())
        finally:
            os._exit(0)  # pylint: disable=protected-access
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        result = pipe.read()
    os.waitpid(pid, 0)
    os.chmod(parent, 0o755)
    os.rmdir(parent)
    return result


def test_actors_are_bounded_by_cores_and_memory():
    gib = 2**30
    assert capacity.max_actors(num_cores=2, memory=24 * gib) == 8
    assert capacity.max_actors(num_cores=64, memory=4 * gib) == 11
    assert capacity.refusal(8, num_cores=2, memory=24 * gib) is None
    assert capacity.refusal(9, num_cores=2, memory=24 * gib) == (
        '--num_actors=9 is more than this machine holds (8: 4 per core on 2 '
        'cores, and 256 MiB per node process in 24.0 GiB); pass '
        '--oversubscribe to start it anyway')


def test_oversubscribe_starts_what_the_machine_does_not_hold(tmp_path):
    too_many = 4 * capacity.cores() + 1
    fields = dict(agent='dqn', env='gym:CartPole-v1', num_actors=too_many,
                  run_dir=str(tmp_path / 'run'), network='host')
    with pytest.raises(cli.UsageError, match='pass --oversubscribe'):
        cli.make_run_config(**fields)
    assert cli.make_run_config(**fields, oversubscribe=True).num_actors == (
        too_many)


def test_publish_period_parsing():
    assert PublishPeriod.parse('500') == PublishPeriod(500.0, 'steps')
    assert PublishPeriod.parse('2.5s') == PublishPeriod(2.5, 'seconds')
    for bad in ('0', '-3s', 'soon', 's', 'nan', 'inf', 'nans', 'infs'):
        with pytest.raises(ValueError, match='--publish_period'):
            PublishPeriod.parse(bad)


def test_layers_parsing():
    assert cli.parse_layers('policy_layers', '256,256') == (256, 256)
    for bad in ('', '256,0', 'a,b'):
        with pytest.raises(cli.UsageError, match='--policy_layers'):
            cli.parse_layers('policy_layers', bad)


def test_help_lists_the_documented_flags():
    result = _train('--helpfull')
    assert result.returncode == 0, result.stderr  # Help is not an error.
    for flag in ('agent', 'env', 'actor_precision', 'num_actors',
                 'd4pg.policy_layers', 'td3.batch_size', 'compression.kind',
                 'max_seconds', 'max_actor_steps', 'publish_period', 'seed',
                 'run_dir', 'launch_type'):
        assert f'--{flag}:' in result.stdout, flag
    for boolean in ('overwrite', 'resume'):  # absl shows --[no]name.
        assert f'--[no]{boolean}:' in result.stdout, boolean


def test_rigl_needs_a_learner_that_hands_over_gradients(tmp_path):
    result = _train(f'--run_dir={tmp_path / "run"}', '--agent=d4pg',
                    '--compression.kind=rigl')
    assert result.returncode == 2, result.stderr
    assert ("--compression.kind=rigl reads the learner's dense gradients"
            in result.stderr and 'do: a2c, ppo, td3' in result.stderr)
    assert not (tmp_path / 'run').exists()


@pytest.mark.parametrize('args, message', [
    (['--ray_address=10.213.0.1:6379'],
     '--ray_address goes with --launch_type=ray only'),
    (['--launch_type=ray'], '--launch_type=ray needs the cluster'),
    (['--launch_type=ray', '--ray_address=10.213.0.1'], 'want HOST:PORT'),
    (['--launch_type=ray', '--ray_address=:6379'], 'want HOST:PORT'),
])
def test_ray_address_is_checked_before_anything_starts(tmp_path, monkeypatch,
                                                       args, message):
    monkeypatch.delenv('RAY_ADDRESS', raising=False)
    result = _train(f'--run_dir={tmp_path / "run"}', *args)
    assert result.returncode == 2, result.stderr
    error_lines = [l for l in result.stderr.splitlines()
                   if l.startswith('train: error:')]
    assert len(error_lines) == 1 and message in error_lines[0], result.stderr
    assert not (tmp_path / 'run').exists()


def test_ray_address_defaults_to_the_environment(monkeypatch):
    monkeypatch.setenv('RAY_ADDRESS', '10.213.0.1:6379')
    config = cli.make_run_config(run_dir='run', launch_type='ray')
    assert config.ray_address == '10.213.0.1:6379'
    monkeypatch.delenv('RAY_ADDRESS')
    with pytest.raises(cli.UsageError, match='needs the cluster'):
        cli.make_run_config(run_dir='run', launch_type='ray')


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


def _config(**changes):
    """cli.make_run_config on a small valid run, `changes` applied."""
    settings = dict(
        agent='d4pg', env='gym:Pendulum-v1', actor_precision='int8',
        num_actors=1, run_dir='/tmp/quarl-test-run', seed=0, max_seconds=10.0,
        max_actor_steps=None, publish_period='5s', eval_episodes=1,
        launch_type='local_mp', agent_overrides={})
    settings.update(changes)
    return cli.make_run_config(**settings)


def _gst(**knobs):
    return CompressionConfig(kind='gst', reward_reference=0.0, **knobs)


@pytest.mark.parametrize('changes, message', [
    (dict(seed=-1), '--seed=-1: want an integer in [0, 2147483647]'),
    (dict(seed=2**40), 'want an integer in [0, 2147483647]'),
    (dict(env='gym:LunarLander-v2'), 'gym:LunarLander-v2 needs a package '
     'this environment lacks: box2D is not installed'),
    (dict(max_seconds=math.nan), '--max_seconds=nan must be > 0'),
    (dict(max_seconds=math.inf), '--max_seconds=inf must be finite'),
    (dict(max_actor_steps=0), '--max_actor_steps=0 must be > 0'),
    (dict(publish_period='nan'), "--publish_period='nan': want a positive"),
    (dict(publish_period='infs'), "--publish_period='infs': want a positive"),
    (dict(eval_episodes=0), '--eval_episodes=0 must be > 0'),
    (dict(max_restarts=-1), '--max_restarts=-1: want 0 or more'),
    (dict(agent_overrides=dict(batch_size=0)), '--d4pg.batch_size=0 must be > 0'),
    (dict(agent_overrides=dict(samples_per_insert=0.0)),
     '--d4pg.samples_per_insert=0.0 must be > 0'),
    (dict(agent_overrides=dict(samples_per_insert=-2.0)),
     '--d4pg.samples_per_insert=-2.0 must be > 0'),
    (dict(agent_overrides=dict(samples_per_insert=math.nan)),
     '--d4pg.samples_per_insert=nan must be > 0'),
    (dict(agent_overrides=dict(min_replay_size=0)),
     '--d4pg.min_replay_size=0 must be > 0'),
    (dict(agent_overrides=dict(max_times_sampled=-1)),
     '--d4pg.max_times_sampled=-1 must be >= 0'),
    (dict(agent_overrides=dict(max_times_sampled=16, samples_per_insert=8.0)),
     '--d4pg.samples_per_insert and --d4pg.max_times_sampled are two replay '
     'regimes'),
    # Reverb's SampleToInsertRatio wants error_buffer (10% of
    # min_replay_size * samples_per_insert) >= max(1, samples_per_insert).
    (dict(agent_overrides=dict(min_replay_size=5)),
     'min_replay_size=5 with samples_per_insert=32.0: Reverb refuses the '
     'rate limiter: The size of error_buffer must be >= 2 * max(1.0, '
     'samples_per_insert)'),
    (dict(agent='dqn', env='gym:CartPole-v1',
          agent_overrides=dict(min_replay_size=19, samples_per_insert=0.5)),
     'Reverb refuses the rate limiter'),
    (dict(agent_overrides=dict(vmin=10.0, vmax=10.0)),
     'vmin=10.0 must be below vmax=10.0'),
    (dict(agent_overrides=dict(vmax=-2000.0)),  # Pendulum's vmin: -1500.
     'vmin=-1500.0 must be below vmax=-2000.0'),
    (dict(agent_overrides=dict(vmin=-math.inf)), '--d4pg.vmin=-inf must be finite'),
    (dict(agent='dqn', env='ale:Breakout'), '--env=ale:Breakout has pixel '
     'observations but --agent=dqn needs vector observations'),
    (dict(network='isolated', launch_type='ray',
          ray_address='10.213.0.1:6379'),
     '--network=isolated cannot go with --launch_type=ray'),
    (dict(compression=_gst(reward_delta=math.nan)),
     'reward delta must be finite and >= 0, got nan'),
    (dict(compression=_gst(reward_delta=math.inf)),
     'reward delta must be finite and >= 0, got inf'),
    (dict(compression=_gst(step_back=math.nan)), 'step_back must be in (0, 1)'),
    (dict(compression=_gst(s_shift=math.nan)), 's_shift must be in (0, 1]'),
    (dict(compression=_gst(s_final=math.nan)), 's_final must be in [0, 1)'),
    (dict(compression=_gst(s_init=-0.1)), 's_init must be in [0, 1)'),
    (dict(compression=_gst(reward_window=0)), 'reward window (0)'),
    (dict(compression=CompressionConfig(kind='prune', begin_step=-5)),
     'begin_step must be >= 0, got -5'),
    (dict(compression=CompressionConfig(kind='prune', end_step=0)),
     'end_step (0) must be > begin_step (0)'),
])
def test_bad_values_are_usage_errors(changes, message):
    with pytest.raises(cli.UsageError) as error:
        _config(**changes)
    assert message in str(error.value)
    assert '\n' not in str(error.value)


def test_accepted_edge_values():
    home = os.path.expanduser('~')
    # A quoted ~ reaches the launcher literally: it is the home directory.
    assert _config(run_dir='~/quarl-run').run_dir == os.path.join(
        home, 'quarl-run')
    assert _config(seed=cli.MAX_SEED).seed == cli.MAX_SEED
    # Reverb's bound exactly: error_buffer 0.1 * 20 * 0.5 = 1 = max(1, 0.5).
    config = _config(agent='dqn', env='gym:CartPole-v1', agent_overrides=dict(
        min_replay_size=20, samples_per_insert=0.5))
    assert config.agent_config.min_replay_size == 20
    # The authors' regime replaces the agent's replay ratio, on every agent.
    for agent, env in (('d4pg', 'gym:Pendulum-v1'), ('td3', 'gym:Pendulum-v1'),
                       ('dqn', 'gym:CartPole-v1')):
      free = _config(agent=agent, env=env, agent_overrides=dict(
          max_times_sampled=16)).agent_config
      assert (free.max_times_sampled, free.samples_per_insert) == (16, None)
    # Threads use a min-size limiter only: no ratio for Reverb to refuse.
    assert _config(launch_type='local_mt', agent_overrides=dict(
        min_replay_size=5)).agent_config.samples_per_insert is None


# Each entry point with one of its numeric flags.
_ENTRY_POINTS = [
    ('launch.train', 'num_actors'), ('launch.reproduce_actorq', 'num_actors'),
    ('launch.reproduce_gst', 'max_seconds'),
    ('benchmarks.actor_inference', 'seconds'),
    ('benchmarks.learner_step', 'seconds'),
    ('benchmarks.learner_compile', 'loop_steps'),
    ('benchmarks.ppo_reference', 'budget'),
    ('benchmarks.publish_cost', 'publishes'),
    ('benchmarks.squash_fidelity', 'seeds'),
    ('benchmarks.int8_fidelity', 'width'),
    ('benchmarks.actorq_extrapolation', 'num_actors'),
    ('benchmarks.replay_cost', 'batches')]


def _module(module, *args, env=None):
    env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='3',
               **(env or {}))
    return subprocess.run([sys.executable, '-m', module, *args],
                          capture_output=True, text=True, timeout=60,
                          env=env, cwd=ROOT)


def _one_error_line(result, prog):
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'{prog}: error: '), \
        result.stderr[-3000:]
    return lines[0]


@pytest.mark.parametrize('module, numeric_flag', _ENTRY_POINTS)
def test_unknown_flags_and_unparsable_values_exit_2(module, numeric_flag):
    """absl alone prints a FATAL banner and exits 1; every entry point says
    one line and exits 2 before anything starts."""
    prog = module.rsplit('.', 1)[1]
    line = _one_error_line(_module(module, '--max_secondz=5'), prog)
    assert "Unknown command line flag 'max_secondz'" in line
    line = _one_error_line(_module(module, f'--{numeric_flag}=abc'), prog)
    assert f'flag --{numeric_flag}=abc: ' in line


@pytest.mark.parametrize('module, args, message', [
    ('launch.reproduce_actorq', ['--tasks=foo'],
     "--tasks entry 'foo': want AGENT:ENV[@SECONDS]"),
    ('launch.reproduce_actorq', ['--tasks=dqn:gym:CartPole-v1@nan'],
     'the budget after @ must be a finite number of seconds > 0'),
    ('launch.reproduce_actorq', ['--tasks=dqn:gym:CartPol-v1'],
     'did you mean: gym:CartPole-v1'),
    ('launch.reproduce_actorq', ['--seeds=-1'],
     "flag --seeds=['-1']: want comma-separated integers in [0, 2147483647]"),
    ('launch.reproduce_actorq', ['--max_seconds=inf'],
     'flag --max_seconds=inf: must be a finite number > 0'),
    ('launch.reproduce_actorq', ['--regimes=acme,free'],
     "unknown regime 'free'; choose from acme, between, authors"),
    ('benchmarks.int8_fidelity', ['--seconds=nan'],
     'flag --seconds=nan: must be a finite number > 0'),
    ('benchmarks.actor_inference', ['--sizes=abc'],
     'flag --sizes=abc: want comma-separated positive widths'),
    ('benchmarks.actor_inference', ['--seconds=nan'],
     'flag --seconds=nan: must be a finite number > 0'),
    ('benchmarks.publish_cost', ['--obs_sizes=3,x'], 'flag --obs_sizes='),
    ('benchmarks.learner_compile', ['--loop_steps=0'],
     'flag --loop_steps=0: must be a finite number > 0'),
    ('benchmarks.learner_compile', ['--envs=gym:CartPol-v1'],
     'did you mean: gym:CartPole-v1'),
    ('benchmarks.ppo_reference', ['--game=Breakou'],
     'did you mean: ale:Breakout'),
    ('benchmarks.ppo_reference', ['--arms=sb3,theirs'],
     'want arms of sb3, ours, ours_int8'),
    ('launch.train', ['--run_dir=/tmp/x', 'extra'],
     'unexpected arguments: extra'),
])
def test_entry_point_values_exit_2(module, args, message, tmp_path):
    out = tmp_path / 'out'
    if module in ('launch.reproduce_actorq', 'benchmarks.ppo_reference'):
        args = [f'--out_dir={out}', *args]
    line = _one_error_line(_module(module, *args), module.rsplit('.', 1)[1])
    assert message in line
    assert not out.exists()


def test_help_exits_0_everywhere():
    for module in ('launch.reproduce_actorq', 'benchmarks.actor_inference'):
        result = _module(module, '--help')
        assert result.returncode == 0, result.stderr[-2000:]
        assert 'flags:' in result.stdout


def test_the_environment_cannot_choose_host_networking(tmp_path):
    """QUARL_NETWORK is the launcher's own marker, not a switch."""
    run_dir = tmp_path / 'run'
    result = _module('launch.train', f'--run_dir={run_dir}',
                     env={'QUARL_NETWORK': 'host'})
    line = _one_error_line(result, 'train')
    assert 'QUARL_NETWORK=host is set' in line
    assert 'only --network=host opts out' in line
    assert not run_dir.exists()


def test_ppo_minibatches_must_split_a_batch_evenly(tmp_path):
  settings = {'agent': 'ppo', 'env': 'ale:Breakout', 'run_dir': str(tmp_path),
              'ppo.batch_size': 4, 'ppo.unroll_length': 8}
  assert cli.resolve({**settings, 'ppo.num_minibatches': 8}
                     ).agent_config.num_minibatches == 8
  with pytest.raises(cli.UsageError, match='must divide a batch\'s 32 steps'):
    cli.resolve({**settings, 'ppo.num_minibatches': 5})


@pytest.mark.parametrize('agent, env, asked, resolved', [
    ('ppo', 'ale:Breakout', 'auto', 'graph'),
    ('ppo', 'gym:CartPole-v1', 'auto', 'xla'),
    ('d4pg', 'gym:Pendulum-v1', 'auto', 'xla'),
    ('ppo', 'ale:Breakout', 'xla', 'xla'),
])
def test_auto_learner_compile_follows_the_observations(tmp_path, agent, env,
                                                       asked, resolved):
    # XLA's convolution gradients are slow on CPU (benchmarks/
    # learner_compile): pixels get a graph unless a mode is asked for.
    config = cli.resolve({'agent': agent, 'env': env, 'run_dir': str(tmp_path),
                          'learner_compile': asked})
    assert config.learner_compile == resolved

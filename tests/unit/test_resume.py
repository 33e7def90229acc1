"""--resume: only the same run, and only one that saved its state."""
import dataclasses
import json
import os

import pytest
import tensorflow as tf

from launch import cli
from launch.runtime import resume
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import runner
from quarl.compression.config import CompressionConfig
from launch.config import PublishPeriod
from launch.config import RunConfig


def _config(run_dir, **changes):
    config = RunConfig(
        agent='dqn', env='gym:CartPole-v1', actor_precision='int8',
        num_actors=2, run_dir=str(run_dir),
        agent_config=cli.make_agent_config('dqn', 'gym:CartPole-v1', {}))
    return dataclasses.replace(config, **changes)


def _resumable(run_dir, config):
    """A stopped run's directory: its config.json (written the way the
    runner writes it), a real learner checkpoint and counts."""
    os.makedirs(os.path.join(run_dir, 'checkpoints', 'learner'))
    runner.write_config(config)
    tf.train.CheckpointManager(
        tf.train.Checkpoint(step=tf.Variable(3)),
        os.path.join(run_dir, 'checkpoints', 'learner'), max_to_keep=2).save()
    with open(os.path.join(run_dir, run_dir_lib.COUNTS_JSON), 'w') as handle:
        json.dump({'actor_steps': 10}, handle)


def test_every_setting_is_identity_or_mutable():
    fields = {field.name for field in dataclasses.fields(RunConfig)}
    top_level_mutable = {name for name in resume.MUTABLE if '.' not in name}
    assert set(resume.IDENTITY) | top_level_mutable == fields
    assert not set(resume.IDENTITY) & top_level_mutable
    compression = {f'compression.{field.name}'
                   for field in dataclasses.fields(CompressionConfig)}
    assert {name for name in resume.MUTABLE + resume.DERIVED
            if name.startswith('compression.')} <= compression


def test_missing_state_names_what_is_missing(tmp_path):
    run_dir = tmp_path / 'run'
    assert resume.missing_state(str(run_dir)) == 'no such directory'
    run_dir.mkdir()
    assert resume.missing_state(str(run_dir)) == 'the directory is empty'
    (run_dir / run_dir_lib.MARKER).write_text('')
    (run_dir / run_dir_lib.LOCK_FILE).write_text('')
    assert resume.missing_state(str(run_dir)) == 'the directory is empty'
    (run_dir / 'evaluator.csv').write_text('')
    assert resume.missing_state(str(run_dir)) == (
        'no config.json, no checkpoints/learner/checkpoint, '
        'no checkpoints/counts.json')
    (run_dir / 'config.json').write_text('{}')
    (run_dir / 'checkpoints' / 'learner').mkdir(parents=True)
    (run_dir / 'checkpoints' / 'learner' / 'checkpoint').write_text('')
    assert resume.missing_state(str(run_dir)) == 'no checkpoints/counts.json'
    (run_dir / 'checkpoints' / 'counts.json').write_text('{}')
    assert resume.missing_state(str(run_dir)) is None


@pytest.mark.parametrize('setup, message', [
    (lambda run_dir: None, 'nothing to resume (no such directory)'),
    (lambda run_dir: run_dir.mkdir(), 'nothing to resume (the directory is '
     'empty)'),
    (lambda run_dir: (run_dir.mkdir(), (run_dir / 'actors.csv').write_text(
        '')), 'nothing to resume (no config.json, '),
])
def test_nothing_to_resume_is_refused(tmp_path, setup, message):
    run_dir = tmp_path / 'run'
    setup(run_dir)
    with pytest.raises(run_dir_lib.RunDirError) as error:
        resume.check(str(run_dir), _config(run_dir, resume=True))
    assert str(error.value).startswith(f'--resume of {run_dir}: {message}')


def test_same_run_with_new_budgets_and_logging_resumes(tmp_path):
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir))
    changed = _config(
        run_dir, max_seconds=600.0, max_actor_steps=10_000,
        publish_period=PublishPeriod(500, 'steps'), eval_episodes=5,
        eval_every=100, eval_fp32=True, max_restarts=0, network='host',
        pin_cpus=True, learner_compile='graph', node_start='exec',
        country_iso_code='FRA',
        resume=True, start_time=123.0,
        compression=CompressionConfig(log_every=7))
    changed = dataclasses.replace(changed, run_dir=str(run_dir) + '/')
    resumed = resume.check(str(run_dir), changed)
    assert dataclasses.replace(resumed, resume_point=None) == changed
    assert resumed.resume_point.learner_checkpoint == 'ckpt-1'
    assert dict(resumed.resume_point.counts) == {'actor_steps': 10}


def test_damaged_saved_state_is_refused_after_the_identity(tmp_path):
    """The settings are compared first (a damaged file of another run is
    not worth naming), then every saved file is read back."""
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir))
    (run_dir / run_dir_lib.COUNTS_JSON).write_text('')
    with pytest.raises(run_dir_lib.RunDirError, match='seed'):
        resume.check(str(run_dir), _config(run_dir, seed=1))
    with pytest.raises(run_dir_lib.RunDirError,
                       match=f'no counts to go with ckpt-1: {run_dir}/'
                       f'{run_dir_lib.COUNTS_JSON}: '):
        resume.check(str(run_dir), _config(run_dir))


def test_a_run_another_launcher_holds_is_refused_before_its_files(
        tmp_path):
    """Its files may be mid-save: 'in use' says more than 'damaged'."""
    import fcntl  # pylint: disable=g-import-not-at-top
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir))
    (run_dir / run_dir_lib.COUNTS_JSON).write_text('')
    with open(run_dir / run_dir_lib.LOCK_FILE, 'w') as held:
        held.write('otherhost 4242\n')
        held.flush()
        # flock locks are per open file: a second descriptor is refused.
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(run_dir_lib.RunDirError,
                           match='in use by pid 4242 on otherhost'):
            resume.check(str(run_dir), _config(run_dir))


@pytest.mark.parametrize('changes, named', [
    (dict(compression=CompressionConfig(kind='gst')),
     "compression.kind ('none' -> 'gst')"),
    (dict(compression=CompressionConfig(s_final=0.5)),
     'compression.s_final (0.9 -> 0.5)'),
    (dict(num_actors=3), 'num_actors (2 -> 3)'),
    (dict(seed=1), 'seed (0 -> 1)'),
    (dict(actor_precision='fp16'), "actor_precision ('int8' -> 'fp16')"),
    (dict(launch_type='local_mt'), "launch_type ('local_mp' -> 'local_mt')"),
    (dict(publish_sparse=True), 'publish_sparse (False -> True)'),
    (dict(agent_config=cli.make_agent_config(
        'dqn', 'gym:CartPole-v1', {'q_layers': (64, 64)})),
     'agent_config.q_layers ([256, 256] -> [64, 64])'),
    (dict(agent_config=cli.make_agent_config(
        'dqn', 'gym:CartPole-v1', {'batch_size': 32})),
     'agent_config.batch_size (64 -> 32)'),
])
def test_another_identity_is_refused_naming_each_difference(tmp_path,
                                                            changes, named):
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir))
    before = sorted(os.listdir(run_dir))
    with pytest.raises(run_dir_lib.RunDirError) as error:
        resume.check(str(run_dir), _config(run_dir, resume=True, **changes))
    message = str(error.value)
    assert message == (f'--resume of {run_dir}: these settings differ from '
                       f"the run's config.json: {named}")
    assert sorted(os.listdir(run_dir)) == before


def test_many_differences_are_capped_on_one_line(tmp_path):
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir))
    other = _config(run_dir, agent='d4pg', env='gym:Pendulum-v1',
                    agent_config=cli.make_agent_config(
                        'd4pg', 'gym:Pendulum-v1', {}))
    with pytest.raises(run_dir_lib.RunDirError) as error:
        resume.check(str(run_dir), other)
    message = str(error.value)
    assert "agent ('dqn' -> 'd4pg')" in message
    assert "env ('gym:CartPole-v1' -> 'gym:Pendulum-v1')" in message
    assert 'more' in message and '\n' not in message


def test_the_measured_gst_reference_is_the_runs(tmp_path):
    """Measured by the launcher, not a flag: a resume keeps the first one."""
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir, compression=CompressionConfig(
        kind='gst', reward_reference=-1200.5)))
    remeasured = _config(run_dir, compression=CompressionConfig(
        kind='gst', reward_reference=-1199.0))
    kept = resume.check(str(run_dir), remeasured)
    assert kept.compression.reward_reference == -1200.5
    assert kept.compression.kind == 'gst'


def test_a_setting_the_run_did_not_record_differs(tmp_path):
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir))
    path = run_dir / run_dir_lib.CONFIG_JSON
    payload = json.loads(path.read_text())
    del payload['run']['publish_sparse']
    path.write_text(json.dumps(payload))
    with pytest.raises(run_dir_lib.RunDirError,
                       match=r'publish_sparse \(unrecorded -> False\)'):
        resume.check(str(run_dir), _config(run_dir))


def test_an_unreadable_config_json_is_refused(tmp_path):
    run_dir = tmp_path / 'run'
    _resumable(run_dir, _config(run_dir))
    (run_dir / run_dir_lib.CONFIG_JSON).write_text('{"run": ')
    with pytest.raises(run_dir_lib.RunDirError,
                       match="cannot read the run's settings"):
        resume.check(str(run_dir), _config(run_dir))


def test_a_killed_segment_moves_the_clock_forward_never_back(tmp_path):
  """Interrupted at 45 s (summary.json says 45), resumed, SIGKILLed at
  95.5 s (no new summary; rows to 95.5, the last one cut short): the next
  resume's clock continues from 95.5, not 45."""
  run_dir = str(tmp_path)
  run_dir_lib.write_json_atomic(os.path.join(run_dir, 'summary.json'),
                                {'wall_s': 45.0})
  with open(os.path.join(run_dir, 'evaluator.csv'), 'w') as handle:
    handle.write('wall_time_s,actor_steps\n30.1,4000\n95.5,14600\n')
  with open(os.path.join(run_dir, 'actors.csv'), 'w') as handle:
    handle.write('wall_time_s,steps\n94.0,7000\n9')  # Cut mid-row.
  assert runner.elapsed_s(run_dir) == 95.5
  assert runner.elapsed_s(str(tmp_path / 'fresh')) == 0.0

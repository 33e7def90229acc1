"""Run-directory files: shared CSV appends, atomic JSON, summary from CSVs."""
import fcntl
import json
import multiprocessing
import os
import socket

import pytest

from agents import d4pg
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import stop
from launch.runtime import summary as summary_lib
from launch.config import RunConfig


def _append_many(path, worker):
    appender = run_dir_lib.CsvAppender(path, ('worker', 'i', 'text'))
    for i in range(200):
        appender.append({'worker': worker, 'i': i, 'text': 'x' * 50})


def test_concurrent_appends_never_interleave(tmp_path):
    path = str(tmp_path / 'rows.csv')
    run_dir_lib.CsvAppender(path, ('worker', 'i', 'text'))
    workers = [multiprocessing.Process(target=_append_many, args=(path, w))
               for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    rows = run_dir_lib.read_csv(path)
    assert len(rows) == 800
    assert all(row['text'] == 'x' * 50 for row in rows)
    with open(path) as handle:
        assert handle.readline().strip() == 'worker,i,text'


def test_write_json_atomic_replaces(tmp_path):
    path = str(tmp_path / 'summary.json')
    run_dir_lib.write_json_atomic(path, {'a': 1})
    run_dir_lib.write_json_atomic(path, {'a': 2})
    assert json.load(open(path)) == {'a': 2}
    assert os.listdir(tmp_path) == ['summary.json']  # No temp files left.


_FAILING_WRITE = '''
import resource, signal, sys
from launch.runtime import run_dir
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill.
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    run_dir.write_bytes_atomic(sys.argv[1], b'x' * 100_000)
except OSError as error:
    print(error.errno)
'''


def test_a_write_that_fails_leaves_the_old_file_and_no_temp_file(tmp_path):
    """A real failing write (the file-size limit of a child process, as a
    full disk would fail it): the old content stays, nothing .tmp is left."""
    import errno  # pylint: disable=g-import-not-at-top
    import subprocess  # pylint: disable=g-import-not-at-top
    import sys  # pylint: disable=g-import-not-at-top
    path = tmp_path / 'counts.json'
    run_dir_lib.write_json_atomic(str(path), {'actor_steps': 7})
    result = subprocess.run(
        [sys.executable, '-c', _FAILING_WRITE, str(path)], capture_output=True,
        text=True, timeout=60,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
    assert result.stdout.strip() == str(errno.EFBIG), result.stderr
    assert json.loads(path.read_text()) == {'actor_steps': 7}
    assert os.listdir(tmp_path) == ['counts.json']


def test_summary_from_csvs(tmp_path):
    config = RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                       actor_precision='int8', num_actors=2,
                       run_dir=str(tmp_path),
                       agent_config=d4pg.config_for_env('gym:Pendulum-v1'))
    evaluations = run_dir_lib.CsvAppender(
        str(tmp_path / run_dir_lib.EVALUATOR_CSV), run_dir_lib.EVALUATOR_FIELDS)
    for t, ret in ((10, -1200.0), (20, -300.0), (30, -450.0)):
        evaluations.append(dict(wall_time_s=t, actor_steps=100 * t,
                                learner_steps=10 * t, episode_return=ret))
    quantizer = run_dir_lib.CsvAppender(
        str(tmp_path / run_dir_lib.QUANTIZER_CSV), run_dir_lib.QUANTIZER_FIELDS)
    quantizer.append(dict(version=0, model_bytes=1000, max_abs_err=0.01,
                          mean_rel_err=0.001, p95_rel_err=0.002))
    quantizer.append(dict(version=-1, status='refused: non-finite weights'))
    quantizer.append(dict(version=1, model_bytes=1200, max_abs_err=0.02,
                          mean_rel_err=0.003, p95_rel_err=0.004))
    actors = run_dir_lib.CsvAppender(
        str(tmp_path / run_dir_lib.ACTORS_CSV), run_dir_lib.ACTORS_FIELDS)
    for actor_id, rate in ((0, 100.0), (1, 150.0), (0, 120.0)):
        actors.append(dict(actor_id=actor_id, steps_per_s=rate,
                           mean_inference_us=10.0))
    startup = run_dir_lib.CsvAppender(
        str(tmp_path / run_dir_lib.STARTUP_CSV), run_dir_lib.STARTUP_FIELDS)
    for t, node, event, cpu in ((9.0, 'learner', 'run_start', 2.0),
                                (14.0, 'actor_1', 'first_step', 2.5),
                                (12.5, 'actor_0', 'first_step', 2.4),
                                (20.25, 'learner', 'first_step', 8.5)):
        startup.append(dict(wall_time_s=t, node=node, event=event,
                            cpu_s=cpu))
    summary = summary_lib.build_summary(config, 31.0, 'completed')
    assert summary['time_to_first_actor_step_s'] == 12.5  # The earliest.
    assert summary['time_to_first_learner_step_s'] == 20.2
    # The learner's CPU up to its first step, not its run_start row's.
    assert summary['learner_startup_cpu_s'] == 8.5
    assert summary['final_return'] == -450.0
    assert summary['best_return'] == -300.0
    assert summary['last5_return'] == -650.0  # All three: fewer than five.
    assert summary['actor_steps'] == 3000 and summary['learner_steps'] == 300
    assert summary['publishes'] == 2 and summary['model_bytes'] == 1200
    assert summary['refused_publishes'] == 1
    assert summary['p95_rel_err'] == 0.004
    assert summary['actor_steps_per_s'] == 270.0  # Latest row per actor.
    assert summary['replay'] == {'regime': 'samples_per_insert',
                                 'samples_per_insert': 32.0,
                                 'max_times_sampled': 0,
                                 'min_replay_size': 1000}
    assert summary['realised_samples_per_insert'] == 6.4  # 300 * 64 / 3000.


def test_actor_time_split_fractions():
    rows = [dict(env_s='1', inference_s='1', adder_s='6', refresh_s='0'),
            dict(env_s='1', inference_s='0', adder_s='1', refresh_s='0')]
    split = summary_lib.actor_time_split(rows)
    assert split == {'env': 0.2, 'inference': 0.1, 'adder': 0.7,
                     'refresh': 0.0}
    assert summary_lib.actor_time_split([]) == {}


def test_quantizer_cpu_share_of_all_recorded_cpu(tmp_path):
    cpu = {'learner': 6.0, 'quantizer': 1.0, 'actor_0': 2.0, 'launcher': 1.0}
    config = RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                       actor_precision='int8', num_actors=1,
                       run_dir=str(tmp_path))
    summary = summary_lib.build_summary(config, 1.0, 'completed',
                                        {'node_cpu_seconds': cpu})
    assert summary['quantizer_cpu_share'] == 0.1
    assert summary_lib.build_summary(
        config, 1.0, 'completed')['quantizer_cpu_share'] is None
    threaded = RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                         actor_precision='int8', num_actors=1,
                         run_dir=str(tmp_path), launch_type='local_mt')
    assert summary_lib.build_summary(
        threaded, 1.0, 'completed',
        {'node_cpu_seconds': cpu})['quantizer_cpu_share'] is None


def test_fp32_return_gap_is_the_mean_of_the_last_paired_evaluations():
    rows = [dict(episode_return='-300', fp32_return=''),
            dict(episode_return='-200', fp32_return='-100'),
            dict(episode_return='-150', fp32_return='-160'),
            dict(episode_return='-120', fp32_return='-130'),
            dict(episode_return='-110', fp32_return='-100')]
    assert summary_lib.fp32_return_gap(rows) == pytest.approx(
        (10 + 10 - 10) / 3)
    assert summary_lib.fp32_return_gap(rows[:1]) is None


def test_an_actor_ends_actors_csv_with_one_last_row(tmp_path):
    """The loop and the stop watcher may both call final(): one row, with
    the steps the actor finished on, whatever the 5 s reporting period."""
    from launch.nodes import actor  # pylint: disable=g-import-not-at-top
    from quarl import actors  # pylint: disable=g-import-not-at-top
    config = RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                       actor_precision='int8', num_actors=1,
                       run_dir=str(tmp_path))
    stats = actor._ActorStats(config, 0, 0.2, actors.TimeSplit(), None)
    stats.steps = 120
    stats.report_every(3600.0)  # Not due: writes nothing.
    stats.final()
    stats.final()
    rows = run_dir_lib.read_csv(str(tmp_path / run_dir_lib.ACTORS_CSV))
    assert [int(row['steps']) for row in rows] == [120]


def _hold_lock(run_dir, holder='otherhost 4242'):
    """A live launcher's lock: our own descriptor, not the module's."""
    run_dir.mkdir(exist_ok=True)
    handle = open(run_dir / run_dir_lib.LOCK_FILE, 'w')
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    handle.write(holder + '\n')
    handle.flush()
    return handle


def _listing(path):
    return sorted((str(p.relative_to(path)), p.stat().st_mtime_ns)
                  for p in path.rglob('*'))


def test_every_prepared_run_dir_is_marked_and_locked(tmp_path):
    run_dir = tmp_path / 'run'
    assert run_dir_lib.prepare_run_dir(str(run_dir), overwrite=False) == str(
        run_dir)
    assert sorted(os.listdir(run_dir)) == [run_dir_lib.MARKER,
                                           run_dir_lib.LOCK_FILE]
    host, pid = (run_dir / run_dir_lib.LOCK_FILE).read_text().split()
    assert (host, int(pid)) == (socket.gethostname(), os.getpid())
    with open(run_dir / run_dir_lib.LOCK_FILE) as handle:
        with pytest.raises(BlockingIOError):  # Held while this process lives.
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # Our own bookkeeping does not make it a non-empty directory.
    run_dir_lib.prepare_run_dir(str(run_dir), overwrite=False)


def test_a_live_run_dir_is_refused_before_anything_is_touched(tmp_path):
    run_dir = tmp_path / 'run'
    holder = _hold_lock(run_dir)
    (run_dir / 'STOP').write_text('budget spent\n')
    (run_dir / run_dir_lib.MARKER).write_text('')
    before = _listing(run_dir)
    for overwrite, resume in ((False, False), (True, False), (False, True)):
        with pytest.raises(run_dir_lib.RunDirError,
                           match='is in use by pid 4242 on otherhost'):
            run_dir_lib.prepare_run_dir(str(run_dir), overwrite, resume)
    assert _listing(run_dir) == before
    assert (run_dir / run_dir_lib.LOCK_FILE).read_text() == 'otherhost 4242\n'
    holder.close()  # The holder ended: its lock went with it.
    run_dir_lib.prepare_run_dir(str(run_dir), overwrite=True)
    assert sorted(os.listdir(run_dir)) == [run_dir_lib.MARKER,
                                           run_dir_lib.LOCK_FILE]


def test_overwrite_empties_only_a_run_dir(tmp_path):
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'notes.txt').write_text('keep me')
    with pytest.raises(run_dir_lib.RunDirError,
                       match='holds files no run wrote; not emptying it'):
        run_dir_lib.prepare_run_dir(str(mine), overwrite=True)
    assert os.listdir(mine) == ['notes.txt']  # Not even a lock file added.

    # config.json alone is not a run; with its results it is (runs from
    # before the marker).
    legacy = tmp_path / 'legacy'
    legacy.mkdir()
    (legacy / run_dir_lib.CONFIG_JSON).write_text('{}')
    with pytest.raises(run_dir_lib.RunDirError, match='no run wrote'):
        run_dir_lib.prepare_run_dir(str(legacy), overwrite=True)
    for results in (run_dir_lib.SUMMARY_JSON, run_dir_lib.EVALUATOR_CSV):
        (legacy / results).write_text('x')
        run_dir_lib.prepare_run_dir(str(legacy), overwrite=True)
        assert run_dir_lib.contents(str(legacy)) == []
        (legacy / run_dir_lib.CONFIG_JSON).write_text('{}')
        os.remove(legacy / run_dir_lib.MARKER)

    marked = tmp_path / 'marked'
    run_dir_lib.prepare_run_dir(str(marked), overwrite=False)
    (marked / 'checkpoints').mkdir()
    (marked / 'checkpoints' / 'counts.json').write_text('{}')
    run_dir_lib.prepare_run_dir(str(marked), overwrite=True)
    assert run_dir_lib.contents(str(marked)) == []


@pytest.mark.parametrize('target', ['cwd', 'home', 'parent_of_cwd'])
def test_overwrite_never_empties_cwd_home_or_above(tmp_path, monkeypatch,
                                                   target):
    home, work = tmp_path / 'home', tmp_path / 'home' / 'work'
    work.mkdir(parents=True)
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.chdir(work)
    path = {'cwd': work, 'home': home, 'parent_of_cwd': tmp_path}[target]
    (path / run_dir_lib.MARKER).write_text('')
    (path / 'results.csv').write_text('x')
    relative = {'cwd': '.', 'home': '~', 'parent_of_cwd': '../..'}[target]
    with pytest.raises(run_dir_lib.RunDirError, match='not emptying it'):
        run_dir_lib.prepare_run_dir(relative, overwrite=True)
    assert (path / 'results.csv').read_text() == 'x'


def test_overwrite_and_resume_exclude_each_other(tmp_path):
    with pytest.raises(run_dir_lib.RunDirError, match='exclude each other'):
        run_dir_lib.prepare_run_dir(str(tmp_path / 'run'), overwrite=True,
                                    resume=True)
    assert not (tmp_path / 'run').exists()


def test_run_status_is_decided_by_failure_then_budget():
    assert summary_lib.run_status('failed: node learner raised X', True) == (
        'failed', 'failed: node learner raised X')
    assert summary_lib.run_status('interrupted', True) == ('completed', '')
    assert summary_lib.run_status('budget spent', False) == (
        'interrupted', '')
    # The launcher's backstop: completed only if evaluations got there.
    assert summary_lib.run_status(stop.BACKSTOP, True) == ('completed', '')
    assert summary_lib.run_status(stop.BACKSTOP, False) == (
        'failed', stop.BACKSTOP)

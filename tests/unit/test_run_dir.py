"""Run-directory files: shared CSV appends, atomic JSON, summary from CSVs."""
import json
import multiprocessing
import os

import pytest

from launch import run_dir as run_dir_lib
from launch import summary as summary_lib
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


def test_summary_from_csvs(tmp_path):
    config = RunConfig(agent='d4pg', env='gym:Pendulum-v1',
                       actor_precision='int8', num_actors=2,
                       run_dir=str(tmp_path))
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
    summary = summary_lib.build_summary(config, 31.0, 'completed')
    assert summary['final_return'] == -450.0
    assert summary['best_return'] == -300.0
    assert summary['actor_steps'] == 3000 and summary['learner_steps'] == 300
    assert summary['publishes'] == 2 and summary['model_bytes'] == 1200
    assert summary['refused_publishes'] == 1
    assert summary['p95_rel_err'] == 0.004
    assert summary['actor_steps_per_s'] == 270.0  # Latest row per actor.


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

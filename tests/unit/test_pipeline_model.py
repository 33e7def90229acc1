"""The pipeline model: which stage bounds a run, what faster actors give."""
import pytest

from launch.analysis import pipeline_model


def _summary(regime, split, rate=100.0, learner_steps=1000, cpu=100.0):
    return dict(replay=dict(regime=regime, samples_per_insert=(
        32.0 if regime == 'samples_per_insert' else None),
                            max_times_sampled=(
                                16 if regime == 'max_times_sampled' else 0)),
                actor_time_split=split, actor_steps_per_s=rate,
                learner_steps=learner_steps,
                node_cpu_seconds={'learner': cpu, 'actor_0': 50.0})


def test_throttled_actors_count_their_limiter_wait_as_idle():
    # Half the time blocked in the adder: unblocked, twice as fast.
    summary = _summary('samples_per_insert', dict(
        env=0.3, inference=0.2, adder=0.5, refresh=0.0))
    assert pipeline_model.actor_rate(summary) == pytest.approx(200.0)
    assert pipeline_model.actor_rate(
        summary, without_inference=True) == pytest.approx(100.0 / 0.3)


def test_free_actors_count_the_insert_as_work():
    summary = _summary('max_times_sampled', dict(
        env=0.3, inference=0.2, adder=0.5, refresh=0.0))
    assert pipeline_model.actor_rate(summary) == pytest.approx(100.0)
    assert pipeline_model.actor_rate(
        summary, without_inference=True) == pytest.approx(125.0)


def test_the_slower_stage_sets_the_speedup():
    # Learner 10 steps/s needing 16 fresh transitions a step: 160 env steps/s
    # feed it. Actors at 80 -> 320 reach its cap at 160: 2x, not 4x.
    assert pipeline_model.speedup(10.0, 80.0, 320.0, 16.0) == pytest.approx(2.0)
    # Learner-bound already: faster actors change nothing.
    assert pipeline_model.speedup(10.0, 200.0, 800.0, 16.0) == 1.0
    # Actor-bound throughout: the actors' ratio.
    assert pipeline_model.speedup(100.0, 80.0, 160.0, 16.0) == pytest.approx(
        2.0)


def test_describe_names_the_bound():
    # 1000 learner steps on 100 CPU-s: 10 steps/s; batch 256 / rho 16 = 16
    # fresh transitions a step, 160 env steps/s wanted.
    slow_actors = pipeline_model.describe(_summary(
        'max_times_sampled', dict(env=0.5, inference=0.5, adder=0.0,
                                  refresh=0.0)), batch_size=256)
    assert slow_actors['bound'] == 'actor'
    assert slow_actors['fresh_transitions_per_learner_step'] == 16.0
    assert slow_actors['learner_cpu_ms_per_step'] == 100.0
    # Free inference doubles the actors (100 -> 200 env steps/s), capped by
    # the learner at 160: 1.6x.
    assert slow_actors['speedup_with_free_inference'] == pytest.approx(1.6)
    fast_actors = pipeline_model.describe(_summary(
        'max_times_sampled', dict(env=0.5, inference=0.5, adder=0.0,
                                  refresh=0.0), rate=1000.0), batch_size=256)
    assert fast_actors['bound'] == 'learner'
    assert fast_actors['speedup_with_free_inference'] == 1.0
    assert pipeline_model.describe(dict(actor_steps_per_s=1.0), 256) is None


def test_the_learner_rate_leaves_its_start_up_cpu_apart():
    # 100 CPU-s in all, 20 of them before the first step: 1000 steps on 80.
    summary = dict(_summary('max_times_sampled', dict(
        env=0.5, inference=0.5, adder=0.0, refresh=0.0)),
                   learner_startup_cpu_s=20.0)
    assert pipeline_model.learner_rate(summary) == pytest.approx(12.5)
    assert pipeline_model.learner_rate(dict(
        summary, learner_startup_cpu_s=None)) == pytest.approx(10.0)
    assert pipeline_model.learner_rate(dict(
        summary, learner_startup_cpu_s=100.0)) is None


def test_predicted_speedup_from_two_runs():
    baseline = dict(learner_steps_per_cpu_s=10.0,
                    actor_steps_per_s_unblocked=80.0,
                    fresh_transitions_per_learner_step=16.0)
    faster = dict(baseline, actor_steps_per_s_unblocked=320.0)
    assert pipeline_model.predicted_speedup(baseline, faster) == (
        pytest.approx(2.0))
    # The faster actors' inserts cost the replay server CPU on the learner's
    # core: their arm's learner stage makes 7.5 steps/s, not 10.
    slowed = dict(faster, learner_steps_per_cpu_s=7.5)
    assert pipeline_model.predicted_speedup(baseline, slowed) == (
        pytest.approx(1.5))
    assert pipeline_model.predicted_speedup(None, faster) is None


def test_the_replay_servers_cpu_is_part_of_the_learner_stage():
    # 1000 steps on 80 CPU-s of the learner and 20 of the replay server:
    # 10 steps per CPU-second of the stage, 20 ms of replay a step.
    summary = _summary('max_times_sampled', dict(
        env=0.5, inference=0.5, adder=0.0, refresh=0.0), cpu=80.0)
    summary['node_cpu_seconds']['replay'] = 20.0
    assert pipeline_model.learner_rate(summary) == pytest.approx(10.0)
    described = pipeline_model.describe(summary, 256)
    assert described['learner_cpu_ms_per_step'] == 80.0
    assert described['replay_cpu_ms_per_learner_step'] == 20.0
    # Without the server's record (older runs) the learner alone counts.
    del summary['node_cpu_seconds']['replay']
    assert pipeline_model.learner_rate(summary) == pytest.approx(12.5)
    assert pipeline_model.describe(
        summary, 256)['replay_cpu_ms_per_learner_step'] is None


def test_the_learner_busy_share_is_its_stepping_cpu_over_wall_time():
    # 100 CPU-s, 20 before its first step at 30 s of a 190 s run: 80 / 160.
    summary = dict(_summary('max_times_sampled', dict(
        env=0.5, inference=0.5, adder=0.0, refresh=0.0)),
                   learner_startup_cpu_s=20.0,
                   time_to_first_learner_step_s=30.0, wall_s=190.0)
    assert pipeline_model.learner_busy_share(summary) == pytest.approx(0.5)
    assert pipeline_model.describe(summary, 256)['learner_busy_share'] == 0.5
    assert pipeline_model.learner_busy_share(dict(
        summary, time_to_first_learner_step_s=None)) is None

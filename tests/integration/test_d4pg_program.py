"""A real local_mp D4PG program with int8 LiteRT actors, end to end."""
import os

import numpy as np

from benchmarks import policies
from conftest import rows as _rows
from conftest import train_and_check_contract

# |int8 - fp32| greedy return, as a fraction of the random policy's return.
RETURN_PARITY = 0.03
# A quantizer whose hidden activations' scales are 20 times too small.
WRONG_SCALE = 0.05
# The run ends on its env steps (about 100 s here); seconds only stop a hang.
ACTOR_STEPS = 40_000
BACKSTOP_S = 1800


def test_int8_d4pg_learns_pendulum(tmp_path):
    run_dir = tmp_path / 'run'
    summary = train_and_check_contract(
        run_dir, '--agent=d4pg', '--env=gym:Pendulum-v1',
        '--actor_precision=int8', '--num_actors=2',
        f'--max_actor_steps={ACTOR_STEPS}', f'--max_seconds={BACKSTOP_S}',
        '--publish_period=5s', '--seed=0', '--eval_fp32',
        timeout=BACKSTOP_S + 300)
    for key in ('agent', 'env', 'actor_precision', 'num_actors', 'wall_s',
                'actor_steps', 'learner_steps', 'final_return', 'best_return',
                'publishes', 'model_bytes'):
        assert key in summary, key
    assert summary['publishes'] >= 5 and summary['model_bytes'] > 0
    assert summary['learner_steps'] > 0
    assert summary['actor_steps'] >= ACTOR_STEPS  # Ended on steps.

    # Learned: clearly above both a random and a do-nothing policy.
    baselines = summary['baseline_returns']
    best_baseline = max(baselines['random'], baselines['zero_action'])
    margin = 0.25 * abs(best_baseline)
    assert summary['best_return'] > best_baseline + margin, summary
    assert summary['final_return'] > best_baseline, summary

    publishes = _rows(run_dir / 'quantizer.csv')
    assert {row['precision'] for row in publishes} == {'int8'}
    assert [int(r['version']) for r in publishes] == list(range(len(publishes)))
    assert any(row['calibration_source'] == 'replay' for row in publishes)
    actors = _rows(run_dir / 'actors.csv')
    assert {row['actor_id'] for row in actors} == {'0', '1'}
    sigmas = {row['actor_id']: float(row['exploration']) for row in actors}
    assert sigmas['0'] != sigmas['1']  # Each actor its own sigma.
    assert max(int(row['policy_version']) for row in actors) >= 3
    evaluations = _rows(run_dir / 'evaluator.csv')
    assert len(evaluations) >= 4
    # The evaluator ran the learner's fp32 policy beside the int8 model.
    assert all(np.isfinite(float(row['fp32_return'])) for row in evaluations)
    # Reward parity on the last checkpoint, the same episode starts for each
    # model: a faithful int8 model sits within RETURN_PARITY of fp32, and one
    # with a wrong activation scale falls outside it (benchmarks/int8_returns
    # measured 0.0, and 54 and 448 for scales 10 and 20 times too small).
    returns = policies.greedy_returns_by_model(
        str(run_dir), episodes=10, wrong_scales=(WRONG_SCALE,))
    gap = {name: abs(values.mean() - returns['fp32'].mean())
           for name, values in returns.items()}
    bound = RETURN_PARITY * abs(baselines['random'])
    assert gap['int8'] < bound < gap[f'int8 scale x{WRONG_SCALE:g}'], gap
    assert os.listdir(run_dir / 'checkpoints' / 'learner')

    # Carbon accounting next to reward and time.
    assert summary['energy_kwh'] > 0 and summary['co2_kg'] > 0
    assert summary['tracking_mode']
    assert {'learner', 'quantizer', 'actor_0', 'actor_1', 'evaluator',
            'replay', 'counter'} <= set(summary['node_cpu_seconds'])
    assert summary['pipeline']['replay_cpu_ms_per_learner_step'] > 0
    # Its start-up CPU (imports, build, compile), as its node recorded it.
    assert 0 < summary['learner_startup_cpu_s'] < (
        summary['node_cpu_seconds']['learner'])
    # The learner compiled its update ahead, before its first step.
    learner_events = [row['event'] for row in _rows(run_dir / 'startup.csv')
                      if row['node'] == 'learner']
    assert learner_events.index('compiled') < learner_events.index(
        'first_step'), learner_events
    with open(run_dir / 'emissions.csv') as handle:
        assert 'energy_consumed' in handle.readline()


def test_threaded_local_mt_launch_completes(tmp_path):
    summary = train_and_check_contract(
        tmp_path / 'mt', '--agent=d4pg', '--env=gym:Pendulum-v1',
        '--actor_precision=fp16', '--num_actors=1', '--max_seconds=25',
        '--launch_type=local_mt')
    assert summary['publishes'] >= 1 and summary['evaluations'] >= 1

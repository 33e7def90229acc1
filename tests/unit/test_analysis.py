"""Time-to-target and the ActorQ comparison on synthetic runs."""
import csv
import json
import os
import subprocess
import sys

import pytest

from launch.analysis import gst_report

from launch.analysis import runs as analysis
from launch import reproduce_actorq
from launch.runtime import run_dir as run_dir_lib


def test_time_to_target_first_crossing():
    curve = [(10.0, -900.0), (20.0, -400.0), (30.0, -150.0), (40.0, -300.0)]
    assert analysis.time_to_target(curve, -400.0) == 20.0  # At, not above.
    assert analysis.time_to_target(curve, -200.0) == 30.0


def test_never_reached_is_none_not_infinity_or_zero():
    curve = [(10.0, 1.0), (20.0, 2.0)]
    assert analysis.time_to_target(curve, 5.0) is None
    assert analysis.time_to_target([], 0.0) is None
    assert analysis.ratio(None, 10.0) is None
    assert analysis.ratio(10.0, None) is None
    assert analysis.fmt(None, missing='not reached') == 'not reached'


def test_target_rule_works_for_negative_rewards():
    assert analysis.target_return(best=-150.0, floor=-1250.0) == pytest.approx(
        -260.0)
    assert analysis.target_return(best=500.0, floor=20.0, fraction=0.5) == 260.0


def _fake_run(root, task, precision, curve, co2, seed='0', fp32_gap=None,
              actor_rate=None, baselines=(-1200.0, -900.0)):
    run_dir = (root / 'runs' / 'acme' / task.replace(':', '_') / f'seed{seed}' /
               precision)
    run_dir.mkdir(parents=True)
    appender = run_dir_lib.CsvAppender(str(run_dir / 'evaluator.csv'),
                                       run_dir_lib.EVALUATOR_FIELDS)
    for t, r in curve:
        appender.append(dict(
            wall_time_s=t, actor_steps=100 * t, learner_steps=10 * t,
            episode_return=r,
            fp32_return='' if fp32_gap is None else r - fp32_gap))
    summary = dict(final_return=curve[-1][1], best_return=max(r for _, r in curve),
                   energy_kwh=co2 * 3, co2_kg=co2, actor_steps_per_s=100.0,
                   model_bytes=1000, status='completed',
                   time_to_first_learner_step_s=5.0, wall_s=100.0,
                   learner_steps=950,
                   baseline_returns=dict(zip(('random', 'zero_action'),
                                             baselines)))
    if actor_rate:
        summary['pipeline'] = dict(learner_steps_per_cpu_s=10.0,
                                   actor_steps_per_s_unblocked=actor_rate,
                                   fresh_transitions_per_learner_step=16.0,
                                   bound='actor')
    (run_dir / 'summary.json').write_text(json.dumps(summary))


def test_compare_and_write_results(tmp_path):
    task = 'd4pg:gym:Pendulum-v1'
    _fake_run(tmp_path, task, 'fp32_tf',
              [(10, -1100.0), (40, -300.0), (80, -150.0)], co2=2.0,
              actor_rate=40.0)
    _fake_run(tmp_path, task, 'int8',
              [(10, -1000.0), (20, -200.0), (30, -160.0)], co2=1.0,
              fp32_gap=-5.0, actor_rate=320.0)
    _fake_run(tmp_path, task, 'fp16', [(10, -1100.0), (20, -1000.0)], co2=1.5)
    # A second seed where int8 is only 2x faster to the same target.
    _fake_run(tmp_path, task, 'fp32_tf',
              [(10, -1100.0), (40, -300.0), (80, -150.0)], co2=2.0, seed='1')
    _fake_run(tmp_path, task, 'int8',
              [(10, -1000.0), (40, -200.0), (60, -150.0)], co2=1.0, seed='1')
    rows = reproduce_actorq.write_results(
        str(tmp_path), [task], ['0', '1'], ['fp32_tf', 'fp16', 'int8'], 0.9)
    by_precision = {r['precision']: r for r in rows if r['seed'] == '0'}
    # From the zero-action return (-900), above the random one (-1200).
    target = -900.0 + 0.9 * (-150.0 + 900.0)  # -225
    assert by_precision['int8']['target_return'] == pytest.approx(target)
    assert by_precision['fp32_tf']['time_to_target_s'] == 80.0
    assert by_precision['int8']['time_to_target_s'] == 20.0
    assert by_precision['int8']['speedup_vs_fp32_tf'] == pytest.approx(4.0)
    # From the first learner step (5 s into both runs): 75 s against 15 s.
    assert by_precision['int8'][
        'time_to_target_from_first_learner_step_s'] == 15.0
    assert by_precision['int8'][
        'speedup_from_first_learner_step_vs_fp32_tf'] == pytest.approx(5.0)
    assert by_precision['int8']['learner_steps_per_s'] == pytest.approx(10.0)
    # Where each arm stood at its time to target (its evaluator row).
    assert (by_precision['int8']['learner_steps_to_target'],
            by_precision['int8']['actor_steps_to_target']) == (200, 2000)
    assert by_precision['fp16']['learner_steps_to_target'] is None
    assert by_precision['int8']['learner_busy_share'] is None  # No CPU kept.
    # Actors 8x faster, the learner's cap (160 env steps/s) at 4x theirs.
    assert by_precision['int8']['predicted_speedup_vs_fp32_tf'] == (
        pytest.approx(4.0))
    assert by_precision['int8']['bound'] == 'actor'
    assert by_precision['fp16']['predicted_speedup_vs_fp32_tf'] is None
    assert by_precision['int8']['co2_ratio_vs_fp32_tf'] == pytest.approx(2.0)
    assert by_precision['fp16']['time_to_target_s'] is None
    assert by_precision['fp16']['speedup_vs_fp32_tf'] is None
    assert by_precision['int8']['fp32_return_gap'] == pytest.approx(-5.0)
    assert by_precision['int8']['final_return_diff_vs_fp32_tf'] == (
        pytest.approx(-10.0 / 750.0))
    results_md = (tmp_path / 'results.md').read_text()
    assert 'not reached' in results_md and 'Target rule' in results_md
    # Over seeds: int8 is 4x and 2x faster, mean 3 (2 to 4); from the first
    # learner step 75/15 = 5x and 75/35 = 2.14x.
    assert ('| acme | d4pg:gym:Pendulum-v1 | int8 | 2 | 3.00 (2.00 to 4.00) '
            '| 3.57 (2.14 to 5.00) | - | 4.00 [1 n/a] | actor |') in results_md
    with open(tmp_path / 'results.csv') as handle:
        assert len(list(csv.DictReader(handle))) == 5
    for plot in ('speedup.png', 'co2.png',
                 'return_acme_d4pg_gym_Pendulum-v1_seed0.png'):
        assert (tmp_path / 'plots' / plot).stat().st_size > 1000


def test_no_target_where_no_run_beats_doing_nothing(tmp_path):
    # cartpole:balance: doing nothing scores 745; both arms stay below it, so
    # reaching "random + 0.9 (best - random)" would say nothing about learning.
    task = 'd4pg:dm_control:cartpole:balance'
    for precision, best in (('fp32_tf', 681.0), ('int8', 700.0)):
        _fake_run(tmp_path, task, precision, [(10, 300.0), (30, best)],
                  co2=1.0, baselines=(319.0, 745.0))
    rows = reproduce_actorq.write_results(str(tmp_path), [task], ['0'],
                                          ['fp32_tf', 'int8'], 0.9)
    assert {r['target_return'] for r in rows} == {None}
    assert {r['time_to_target_s'] for r in rows} == {None}
    assert {r['speedup_vs_fp32_tf'] for r in rows} == {None}
    assert {r['final_return_diff_vs_fp32_tf'] for r in rows} == {None}
    assert '| none | not reached |' in (tmp_path / 'results.md').read_text()


def test_emissions_at_interpolates_cumulative_rows(tmp_path):
    (tmp_path / 'emissions.csv').write_text(
        'duration,emissions,energy_consumed\n'
        '0.0,0.0,0.0\n30.0,3.0,6.0\n60.0,9.0,18.0\n')
    assert analysis.emissions_at(str(tmp_path), 45.0) == (12.0, 6.0)
    assert analysis.emissions_at(str(tmp_path), None) == (None, None)
    assert analysis.emissions_at(str(tmp_path / 'missing'), 10.0) == (None,
                                                                     None)


def test_gst_lead_over_pruning_is_bounded_by_the_schedule():
    # Pruning ramps 0 -> 0.9; a GST arm at 0.75 leads only until 0.75.
    prune_curve = list(enumerate([0.0, 0.3, 0.6, 0.75, 0.9, 0.9]))
    assert analysis.lead_bound(prune_curve, 0.75) == pytest.approx(
        (0.75 + 0.45 + 0.15) / 6)
    assert analysis.lead_bound(prune_curve, 0.0) == 0.0


def test_circulant_plateau_ignores_the_pruned_phase(tmp_path):
    with open(tmp_path / run_dir_lib.COMPRESSION_CSV, 'w') as handle:
        handle.write('learner_step,phase,compressed_cr\n0,circulant,0.75\n'
                     '100,circulant,0.8125\n200,sparse,0.9\n')
    assert analysis.circulant_plateau(str(tmp_path)) == 0.8125


def _fake_gst_run(results_dir, arm_path, returns, cr, env='ale:Breakout'):
    """A finished reproduce_gst run's small files: evaluations, CR log and
    summary."""
    run_dir = results_dir / arm_path
    run_dir.mkdir(parents=True)
    appender = run_dir_lib.CsvAppender(str(run_dir / 'evaluator.csv'),
                                       run_dir_lib.EVALUATOR_FIELDS)
    for step, value in enumerate(returns):
        appender.append(dict(wall_time_s=step, actor_steps=1000 * step,
                             learner_steps=step, episode_return=value,
                             fp32_return=''))
    with open(run_dir / 'compression.csv', 'w', newline='') as handle:
        writer = csv.writer(handle)
        writer.writerow(['learner_step', 'phase', 'compressed_cr'])
        writer.writerow([0, 'circulant' if 'gst' in arm_path else 'dense',
                         cr])
    (run_dir / 'summary.json').write_text(json.dumps(dict(
        average_cr=cr, final_cr=cr, final_network_cr=cr,
        final_return=returns[-1], best_return=max(returns), actor_steps=100,
        learner_steps=len(returns), status='completed', env=env)))


def _reproduce_gst(*args):
    env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='3')
    return subprocess.run(
        [sys.executable, '-m', 'launch.reproduce_gst', *args],
        capture_output=True, text=True, timeout=300, env=env)


def test_gst_tables_come_from_the_results_dir_alone(tmp_path):
    """A noisy last evaluation must not decide "equal return": the tables
    (regenerated from committed small files, no run directories) report the
    mean of the last five evaluations against dense's, and the lead in
    average CR over pruning on the same schedule."""
    results = tmp_path / 'results'
    _fake_gst_run(results, 'ale_Breakout/dense/seed_0',
                  [0, 9, 10, 11, 12, 13, 20], 0.0)
    _fake_gst_run(results, 'ale_Breakout/prune_B2/standard_s0.9/seed_0',
                  [0, 1, 12, 11, 10, 12, 5], 0.5)
    _fake_gst_run(results, 'ale_Breakout/gst_B2_s1.0/standard_s0.9/seed_0',
                  [0, 1, 12, 14, 14, 12, 14], 0.8)
    assert analysis.late_return([(0, 1.0), (1, 3.0)], 5) == 2.0
    assert analysis.late_return([], 5) is None
    result = _reproduce_gst('--agent=a2c', f'--out_dir={tmp_path / "runs"}',
                            f'--results_dir={results}', '--seeds=0',
                            '--methods=dense,prune_B2,gst_B2_s1.0')
    assert result.returncode == 0, result.stderr
    assert '3 of 3 runs already in' in result.stdout
    assert not (tmp_path / 'runs').exists()  # Nothing ran.
    with open(results / 'a2c.csv') as handle:
        rows = {r['method']: r for r in csv.DictReader(handle)}
    assert float(rows['dense']['last5_return']) == pytest.approx(13.2)
    assert float(rows['prune_B2']['last5_return']) == pytest.approx(10.0)
    assert float(rows['prune_B2']['last5_vs_dense']) == pytest.approx(
        10 / 13.2)
    assert ('| ale:Breakout | prune_B2 | standard | 0.9 | 0 | 0.5 | 0.5 | '
            '0.5 | 5 | 12 | 10 | 0.758 | 100 | 7 |') in result.stdout
    assert ('ale:Breakout gst_B2_s1.0 (standard, final sparsity 0.9, 1 '
            'seeds): +30.0 points of average CR over pruning (target +25: '
            'met); last-5 return 1 of dense by seed, 1 by mean (target 0.97 '
            'by both: met)') in result.stdout
    assert (results / 'plots' / 'return_a2c_ale_Breakout.png').exists()


def test_a_subset_run_still_tables_every_recorded_run(tmp_path):
    """A queue that runs one seed or one sparsity at a time must not
    rewrite the committed tables with only its own runs."""
    results = tmp_path / 'results'
    for seed in '01':
        _fake_gst_run(results, f'ale_Breakout/dense/seed_{seed}',
                      [0, 10, 10, 10, 10, 10], 0.0)
        _fake_gst_run(results, f'ale_Breakout/prune_B2/standard_s0.9/'
                      f'seed_{seed}', [0, 9, 9, 9, 9, 9], 0.5)
    _fake_gst_run(results, 'ale_Breakout/prune_B2/standard_s0.95/seed_0',
                  [0, 8, 8, 8, 8, 8], 0.6)
    (results / 'plots').mkdir()
    result = _reproduce_gst('--agent=a2c', f'--out_dir={tmp_path / "runs"}',
                            f'--results_dir={results}', '--seeds=1',
                            '--methods=dense')
    assert result.returncode == 0, result.stderr
    assert '1 of 1 runs already in' in result.stdout
    with open(results / 'a2c.csv') as handle:
        rows = [(r['method'], r['sparsity_final'], r['seed'])
                for r in csv.DictReader(handle)]
    assert rows == [('dense', '', '0'), ('prune_B2', '0.9', '0'),
                    ('prune_B2', '0.95', '0'), ('dense', '', '1'),
                    ('prune_B2', '0.9', '1')]
    assert '| ale:Breakout | prune_B2 | standard | 0.95 | 0 |' in (
        result.stdout)


def test_a_failed_dense_seed_cannot_carry_the_reward_target():
    # Seed 1's dense run failed (100): per seed GST is at 0.5 and 6.0 of
    # dense (mean 3.25), but its mean return is 0.65 of dense's.
    def row(method, seed, late, cr):
        return dict(env='e', method=method, schedule='' if method == 'dense'
                    else 'standard', sparsity_final='' if method == 'dense'
                    else '0.9', seed=seed, average_cr=cr, final_cr=0.9,
                    last5_return=late,
                    last5_vs_dense=None)
    rows = [row('dense', '0', 1200.0, 0.0), row('dense', '1', 100.0, 0.0),
            row('prune', '0', 600.0, 0.5), row('prune', '1', 600.0, 0.5),
            row('gst_x', '0', 600.0, 0.8), row('gst_x', '1', 600.0, 0.8)]
    rows[4]['last5_vs_dense'], rows[5]['last5_vs_dense'] = 0.5, 6.0
    means = gst_report.arm_means(rows)
    gst = next(m for m in means if m['method'] == 'gst_x')
    assert gst['last5_vs_dense'] == pytest.approx(3.25)
    assert gst['last5_mean_vs_dense_mean'] == pytest.approx(600 / 650)
    (line,) = gst_report.target_lines(means)
    assert 'by both: missed' in line and '+30.0 points' in line


def test_the_sparsity_sweep_compares_the_seeds_it_ran():
    # Pruning at 0.9 has 3 seeds, the sweep's other sparsities seed 0 only:
    # seed 0 alone decides, not a 3-seed mean beside 1-seed points.
    def row(method, sparsity, seed, late, ratio):
        return dict(env='e', method=method, schedule='' if method == 'dense'
                    else 'standard', sparsity_final=sparsity, seed=seed,
                    average_cr=0.5, final_cr=0.9, last5_return=late,
                    last5_vs_dense=ratio, run_dir=f'{method}{sparsity}{seed}')
    rows = [row('dense', '', seed, 1000.0, 1.0) for seed in '012']
    rows += [row('prune', '0.9', '0', 600.0, 0.6),
             row('prune', '0.9', '1', 1000.0, 1.0),
             row('prune', '0.9', '2', 1000.0, 1.0),
             row('prune', '0.8', '0', 980.0, 0.98),
             row('prune', '0.95', '0', 500.0, 0.5)]
    (line,) = gst_report.ultimate(gst_report.sweep_means(rows))
    assert line == ('e', 'prune', 'standard', 1,
                    '0.8: 0.98, 0.9: 0.6, 0.95: 0.5', '0.8')


def test_emissions_at_puts_resumed_segments_on_the_run_clock(tmp_path):
    # A resumed run's tracker counts again from zero (no run_id column here:
    # the falling duration alone marks the new segment).
    (tmp_path / 'emissions.csv').write_text(
        'duration,emissions,energy_consumed\n'
        '0.0,0.0,0.0\n60.0,3.0,6.0\n0.0,0.0,0.0\n40.0,2.0,4.0\n')
    assert analysis.emissions_at(str(tmp_path), 30.0) == (3.0, 1.5)
    assert analysis.emissions_at(str(tmp_path), 80.0) == (8.0, 4.0)
    assert analysis.emissions_at(str(tmp_path), 500.0) == (10.0, 5.0)


def test_a_baseline_that_never_reached_the_target_bounds_the_speedup(tmp_path):
    task = 'dqn:gym:CartPole-v1'
    # fp32_tf's 100 s run never reaches 0.9 of int8's best; int8 does at 25 s.
    _fake_run(tmp_path, task, 'fp32_tf', [(10, 20.0), (90, 200.0)], co2=1.0)
    _fake_run(tmp_path, task, 'int8', [(10, 20.0), (25, 500.0)], co2=1.0)
    rows = reproduce_actorq.write_results(str(tmp_path), [task], ['0'],
                                          ['fp32_tf', 'int8'], 0.9)
    int8, = [r for r in rows if r['precision'] == 'int8']
    assert int8['speedup_vs_fp32_tf'] is None
    assert int8['speedup_at_least_vs_fp32_tf'] == pytest.approx(4.0)
    assert '| not reached | not reached | >= 4.00 |' in (
        tmp_path / 'results.md').read_text()


def test_a_run_that_never_reached_the_baselines_target_bounds_it_above(
        tmp_path):
    task = 'dqn:gym:CartPole-v1'
    # fp32_tf reaches the target at 50 s on seed 0; int8's 100 s run never
    # does. On seed 1 it is the other way round.
    _fake_run(tmp_path, task, 'fp32_tf', [(10, 20.0), (50, 500.0)], co2=1.0)
    _fake_run(tmp_path, task, 'int8', [(10, 20.0), (90, 200.0)], co2=1.0)
    _fake_run(tmp_path, task, 'fp32_tf', [(10, 20.0), (90, 200.0)], co2=1.0,
              seed='1')
    _fake_run(tmp_path, task, 'int8', [(10, 20.0), (25, 500.0)], co2=1.0,
              seed='1')
    rows = reproduce_actorq.write_results(str(tmp_path), [task], ['0', '1'],
                                          ['fp32_tf', 'int8'], 0.9)
    seed0, seed1 = [r for r in rows if r['precision'] == 'int8']
    assert seed0['speedup_at_most_vs_fp32_tf'] == pytest.approx(0.5)
    assert seed0['speedup_at_least_vs_fp32_tf'] is None
    assert seed1['speedup_at_least_vs_fp32_tf'] == pytest.approx(4.0)
    assert '| 2 | not reached | not reached | >= 4.00; <= 0.50 |' in (
        tmp_path / 'results.md').read_text()


def test_gst_lead_over_each_baseline_on_the_seeds_both_ran():
    def row(method, seed, cr, late, sparsity='0.9'):
        dense = method == 'dense'
        return dict(env='e', method=method, schedule='' if dense else
                    'standard', sparsity_final='' if dense else sparsity,
                    seed=seed, average_cr=cr, final_cr=0.9,
                    last5_return=late, last5_vs_dense=late / 1000.0,
                    run_dir=f'{method}{sparsity}{seed}')
    rows = [row('dense', seed, 0.0, 1000.0) for seed in '012']
    rows += [row('gst_x', '0', 0.8, 969.8), row('gst_x', '1', 0.8, 500.0),
             row('gst_x', '2', 0.8, 500.0), row('prune', '0', 0.5, 800.0),
             row('prune', '1', 0.5, 800.0), row('rigl', '0', 0.9, 950.0),
             row('static_B4', '0', 0.9, 900.0),
             row('rigl', '0', 0.9, 950.0, sparsity='0.8')]
    leads = {r[4]: r for r in gst_report.baseline_leads(rows)}
    assert sorted(leads) == ['prune', 'rigl', 'static_B4']
    assert leads['prune'][5] == '0, 1' and leads['rigl'][5] == '0'
    assert leads['prune'][8] == '30' and leads['rigl'][8] == '-10'
    # GST on seed 0 alone beside RigL's seed 0, printed as measured.
    assert leads['rigl'][9] == '0.9698' and leads['rigl'][10] == '0.95'
    assert leads['prune'][9] == '0.7349'


def test_one_evaluation_above_the_floor_sets_no_target(tmp_path):
    """A lucky evaluation is not learning: humanoid:stand's single one
    would have set a target that decided a 'speedup'."""
    task = 'dqn:gym:CartPole-v1'
    # Floor -900 (the zero-action return); only fp32_tf's 50 s beats it.
    _fake_run(tmp_path, task, 'fp32_tf', [(10, -1000.0), (50, -850.0)],
              co2=1.0)
    _fake_run(tmp_path, task, 'int8', [(10, -1000.0), (90, -950.0)], co2=1.0)
    rows = reproduce_actorq.write_results(str(tmp_path), [task], ['0'],
                                          ['fp32_tf', 'int8'], 0.9)
    int8, = [r for r in rows if r['precision'] == 'int8']
    assert int8['target_return'] is None
    assert int8['speedup_at_most_vs_fp32_tf'] is None
    assert int8['final_return_diff_vs_fp32_tf'] is None
    # On seed 1 a second evaluation above the floor makes it a target.
    _fake_run(tmp_path, task, 'fp32_tf', [(10, -1000.0), (50, -850.0)],
              co2=1.0, seed='1')
    _fake_run(tmp_path, task, 'int8', [(10, -1000.0), (90, -890.0)], co2=1.0,
              seed='1')
    rows = reproduce_actorq.write_results(str(tmp_path), [task], ['1'],
                                          ['fp32_tf', 'int8'], 0.9)
    int8, = [r for r in rows if r['precision'] == 'int8']
    assert int8['target_return'] == pytest.approx(-900 + 0.9 * 50)

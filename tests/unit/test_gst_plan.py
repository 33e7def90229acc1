"""reproduce_gst's plan: arms, the standard schedule, recorded results."""
import json
import subprocess

from launch import gst_plan


def _chosen(**changes):
    chosen = dict(gst_plan.AGENT_DEFAULTS['td3'], agent='td3',
                  schedules=['standard', 'early'], sparsities=['0.9'])
    chosen.update(changes)
    return chosen


def test_dense_runs_once_for_every_schedule_and_sparsity():
    arms = gst_plan.arms(_chosen(
        envs=['gymnasium:HalfCheetah-v5'], methods=['dense', 'prune'],
        seeds=['0'], sparsities=['0.9', '0.95']))
    assert [a.path for a in arms] == [
        'gymnasium_HalfCheetah-v5/dense/seed_0',
        'gymnasium_HalfCheetah-v5/prune/standard_s0.9/seed_0',
        'gymnasium_HalfCheetah-v5/prune/standard_s0.95/seed_0',
        'gymnasium_HalfCheetah-v5/prune/early_s0.9/seed_0',
        'gymnasium_HalfCheetah-v5/prune/early_s0.95/seed_0']


def test_standard_schedule_is_20_to_80_percent_of_the_learner_steps():
    """TD3 learns after 10k inserts at one step per insert: 150k env steps
    make 140k learner steps, so the ramp runs from 28k to 112k."""
    chosen = _chosen()
    prune = gst_plan.Arm('gymnasium:HalfCheetah-v5', 'prune',
                              'standard', '0.9', '0')
    assert gst_plan.schedule_steps(chosen, prune) == [28_000, 112_000]
    early = prune._replace(schedule='early')
    assert gst_plan.schedule_steps(chosen, early) == [5000, 90_000]
    args = gst_plan.train_args(chosen, prune)
    assert '--prune_begin_step=28000' in args
    assert '--sparsity_final=0.9' in args
    assert '--preset=paper' in args
    dense = prune._replace(method='dense', schedule='', sparsity='')
    assert not any(a.startswith('--prune_')
                   for a in gst_plan.train_args(chosen, dense))


def test_a2c_schedule_counts_batches_of_unrolls():
    chosen = dict(gst_plan.AGENT_DEFAULTS['a2c'], agent='a2c')
    arm = gst_plan.Arm('ale:Breakout', 'prune_B2', 'standard', '0.9', '0')
    # 400k env steps / (4 x 16) = 6250 learner steps.
    assert gst_plan.schedule_steps(chosen, arm) == [1250, 5000]


def _git(cwd, *args):
    return subprocess.run(['git', *args], cwd=cwd, capture_output=True,
                          text=True, check=True).stdout


def test_a_completed_run_is_recorded_and_committed_alone(tmp_path):
    repo = tmp_path / 'repo'
    repo.mkdir()
    _git(repo, 'init', '-q')
    _git(repo, 'config', 'user.email', 'test@example.invalid')
    _git(repo, 'config', 'user.name', 'test')
    (repo / 'other.txt').write_text('staged, not ours\n')
    _git(repo, 'add', 'other.txt')
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    (run_dir / 'evaluator.csv').write_text('wall_time_s\n1\n')
    (run_dir / 'checkpoints').mkdir()  # Large state stays behind.
    destination = repo / 'results' / 'env' / 'dense' / 'seed_0'

    (run_dir / 'summary.json').write_text(json.dumps({'status': 'failed'}))
    gst_plan.record(str(run_dir), str(destination), 'msg')
    assert not destination.exists()  # Left to be resumed.

    (run_dir / 'summary.json').write_text(json.dumps({'status': 'completed'}))
    gst_plan.record(str(run_dir), str(destination), 'run landed')
    assert sorted(p.name for p in destination.iterdir()) == [
        'evaluator.csv', 'summary.json']
    committed = _git(repo, 'show', '--name-only', '--format=%s', 'HEAD')
    assert committed.split() == ['run', 'landed',
                                 'results/env/dense/seed_0/evaluator.csv',
                                 'results/env/dense/seed_0/summary.json']
    assert _git(repo, 'diff', '--cached', '--name-only') == 'other.txt\n'

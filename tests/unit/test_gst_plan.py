"""reproduce_gst's plan: arms, the standard schedule, recorded results."""
import dataclasses
import json
import subprocess

import pytest

import agents
from launch import cli
from launch import settings as launch_settings
from launch.analysis import gst_plan
from launch.runtime import sweep
from quarl.compression.config import CompressionConfig
from launch.config import RunConfig


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
    """TD3 (the paper's setting) learns after 1k inserts at one step per
    insert: 150k env steps make 149k learner steps, so the ramp runs from
    29.8k to 119.2k."""
    chosen = _chosen()
    prune = gst_plan.Arm('gymnasium:HalfCheetah-v5', 'prune',
                              'standard', '0.9', '0')
    assert gst_plan.schedule_steps(chosen, prune) == [29_800, 119_200]
    early = prune._replace(schedule='early')
    assert gst_plan.schedule_steps(chosen, early) == [5000, 90_000]
    settings = gst_plan.train_settings(chosen, prune)
    assert settings['compression.begin_step'] == 29_800
    assert settings['compression.end_step'] == 119_200
    assert settings['compression.s_final'] == 0.9
    assert settings['compression.kind'] == 'prune'
    assert settings['preset'] == 'paper'
    dense = prune._replace(method='dense', schedule='', sparsity='')
    assert not any(name.startswith('compression.') and name != (
        'compression.kind') for name in gst_plan.train_settings(chosen, dense))


def test_every_method_and_agent_setting_is_a_launch_train_flag():
    """Names are checked against the generated flags' fields, so a renamed
    setting fails here rather than in the sweep's first run."""
    names = {f.name for f in dataclasses.fields(RunConfig)}
    names |= {f'compression.{f.name}'
              for f in dataclasses.fields(CompressionConfig)}
    for agent, defaults in gst_plan.AGENT_DEFAULTS.items():
      names_here = names | {f'{agent}.{f.name}' for f in dataclasses.fields(
          agents.config_class(agent))}
      chosen = dict(defaults, agent=agent, schedules=['standard'],
                    sparsities=['0.9'])
      for method in gst_plan.METHODS:
        arm = gst_plan.Arm(chosen['envs'][0], method, 'standard', '0.9', '0')
        assert set(gst_plan.train_settings(chosen, arm)) <= names_here


def test_schedules_resolve_against_the_agent_settings_given():
    """--train_args that move learning's start move the ramp with it: the
    preset's 1k-insert start, replaced by 10k, makes 140k learner steps."""
    chosen = _chosen()
    chosen['train'] = dict(chosen['train'], **launch_settings.parse_train_args(
        ['--td3.min_replay_size=10000']))
    prune = gst_plan.Arm('gymnasium:HalfCheetah-v5', 'prune', 'standard',
                         '0.9', '0')
    assert gst_plan.schedule_steps(chosen, prune) == [28_000, 112_000]
    with pytest.raises(cli.UsageError, match='td3.batch_size'):
        launch_settings.parse_train_args(['--td3.batch_size=many'])


def test_an_arm_resolves_to_the_run_config_its_run_gets(tmp_path):
    """The sweep hands launch.train this config as data: its fields are
    the arm's, typed, with the preset recorded."""
    chosen = _chosen()
    arm = gst_plan.Arm('gymnasium:HalfCheetah-v5', 'gst_b4f_b2_s0.25',
                       'standard', '0.9', '1')
    config = cli.resolve({**gst_plan.train_settings(chosen, arm),
                          'run_dir': str(tmp_path)})
    assert (config.seed, config.preset, config.num_actors) == (1, 'paper', 1)
    assert config.compression.kind == 'gst'
    assert config.compression.transform == 'b4_friendly_b2'
    assert config.compression.begin_step == 29_800
    assert config.publish_period.text() == '5s'
    assert config.agent_config.batch_size == 100  # The TD3 paper's.


def test_a2c_schedule_counts_batches_of_unrolls():
    chosen = dict(gst_plan.AGENT_DEFAULTS['a2c'], agent='a2c')
    arm = gst_plan.Arm('ale:Breakout', 'prune_B2', 'standard', '0.9', '0')
    # 400k env steps / (4 x 16) = 6250 learner steps.
    assert gst_plan.schedule_steps(chosen, arm) == [1250, 5000]


def test_ppo_anneals_over_the_learner_steps_of_its_budget():
    chosen = dict(gst_plan.AGENT_DEFAULTS['ppo'], agent='ppo')
    arm = gst_plan.Arm(chosen['envs'][0], 'dense', '', '', '0')
    config = agents.config_class('ppo')()
    assert gst_plan.train_settings(chosen, arm)['ppo.anneal_steps'] == (
        chosen['max_actor_steps'] // (config.batch_size *
                                      config.unroll_length))
    td3 = _chosen()
    assert not any('anneal' in name for name in gst_plan.train_settings(
        td3, gst_plan.Arm('gymnasium:HalfCheetah-v5', 'dense', '', '', '0')))


def _git(cwd, *args):
    return subprocess.run(['git', *args], cwd=cwd, capture_output=True,
                          text=True, check=True).stdout


def test_a_completed_run_is_committed_with_its_tables_alone(tmp_path):
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
    sweep.record(str(run_dir), str(destination), gst_plan.RESULT_FILES, 'msg')
    assert not destination.exists()  # Left to be resumed.

    def write_table():
        table = repo / 'results' / 'table.md'
        table.write_text(str(sorted(destination.iterdir())))
        return sweep.tables_in(str(repo / 'results'))

    (run_dir / 'summary.json').write_text(json.dumps({'status': 'completed'}))
    sweep.record(str(run_dir), str(destination), gst_plan.RESULT_FILES,
                 'run landed', refresh=write_table)
    assert sorted(p.name for p in destination.iterdir()) == [
        'evaluator.csv', 'summary.json']
    committed = _git(repo, 'show', '--name-only', '--format=%s', 'HEAD')
    assert committed.split() == ['run', 'landed',
                                 'results/env/dense/seed_0/evaluator.csv',
                                 'results/env/dense/seed_0/summary.json',
                                 'results/table.md']
    assert 'summary.json' in _git(repo, 'show', 'HEAD:results/table.md')
    assert _git(repo, 'diff', '--cached', '--name-only') == 'other.txt\n'

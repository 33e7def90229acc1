"""Flags generated from the config dataclasses: one source for every
setting's name, type, default and help, and docs tables kept in step."""
import dataclasses
import os
import subprocess
import sys
from typing import Optional, Sequence

from absl import flags
import pytest

import agents
from launch import flag_tables
from launch import settings
from quarl.compression.config import CompressionConfig
from launch.config import PublishPeriod
from launch.config import RunConfig
from quarl import settings as quarl_settings
from quarl.classify import TrainConfig
from quarl.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
CONFIGS = [RunConfig, CompressionConfig, TrainConfig] + [
    agents.config_class(name) for name in agents.AGENT_NAMES]


@pytest.mark.parametrize('cls', CONFIGS, ids=lambda cls: cls.__name__)
def test_every_setting_has_help_and_a_default(cls):
  for field in dataclasses.fields(cls):
    assert quarl_settings.help_of(field), f'{cls.__name__}.{field.name}'
    assert field.default is not dataclasses.MISSING, field.name


@dataclasses.dataclass(frozen=True)
class _Example:
  widths: Sequence[int] = setting((64, 64), 'Widths')
  rate: float = setting(0.5, 'A rate')
  steps: Optional[int] = setting(None, 'Steps')
  on: bool = setting(True, 'A switch')
  period: PublishPeriod = setting(PublishPeriod(5.0, 'seconds'), 'Period')
  hidden: int = setting(0, 'Set by the launcher', flag=False)


def _parse(*argv, unset_defaults=False):
  values = flags.FlagValues()
  group = settings.define(_Example, prefix='ex.',
                          unset_defaults=unset_defaults, flag_values=values)
  values(['prog', *argv])
  return group, values


def test_flags_are_the_fields_under_a_prefix_and_only_given_ones_return():
  group, values = _parse('--ex.widths=8,16', '--noex.on',
                         '--ex.period=500')
  assert sorted(values) == ['ex.on', 'ex.period', 'ex.rate', 'ex.steps',
                            'ex.widths']  # No flag for `hidden`.
  assert group.given() == {'widths': (8, 16), 'on': False, 'period': '500'}
  assert values['ex.rate'].value == 0.5  # The dataclass default.
  row = dict((flag, (default, text)) for flag, default, text in group.rows())
  assert row['--ex.widths'] == ('64,64', 'Widths')
  assert row['--ex.period'] == ('5s', 'Period')


def test_unset_defaults_name_the_dataclass_default_in_help():
  group, values = _parse(unset_defaults=True)
  assert group.given() == {}
  assert values['ex.rate'].value is None
  assert 'default: 0.5' in values['ex.rate'].help


def test_bad_widths_are_one_usage_line():
  group, _ = _parse('--ex.widths=8,x')
  with pytest.raises(settings.cli.UsageError, match='--ex.widths'):
    group.given()


def test_structured_overrides_round_trip_through_argv():
  chosen = {'seed': 3, 'compression.kind': 'gst', 'eval_fp32': True,
            'pin_cpus': False, 'td3.policy_layers': (256, 256)}
  argv = settings.to_argv(chosen)
  assert argv == ['--seed=3', '--compression.kind=gst', '--eval_fp32',
                  '--nopin_cpus', '--td3.policy_layers=256,256']
  assert settings.from_argv(argv) == {
      'seed': '3', 'compression.kind': 'gst', 'eval_fp32': True,
      'pin_cpus': False, 'td3.policy_layers': '256,256'}
  # A later setting of a name replaces it: no repeated flag.
  assert settings.from_argv(['--seed=1', '--seed=2']) == {'seed': '2'}
  with pytest.raises(ValueError, match='not a --flag=value'):
    settings.from_argv(['seed=1'])


def test_a_sweeps_train_args_are_parsed_once_by_launch_trains_flags():
  values = settings.parse_train_args(
      ['--pin_cpus', '--td3.policy_layers=8,8', '--compression.s_final=0.5',
       '--seed=1', '--seed=2'])
  assert values == {'pin_cpus': True, 'td3.policy_layers': (8, 8),
                    'compression.s_final': 0.5, 'seed': 2}
  for bad, message in ((['seed=1'], 'not a --flag=value'),
                       (['--no_such_flag=1'], 'no_such_flag'),
                       (['--seed=x'], 'seed')):
    with pytest.raises(settings.cli.UsageError, match=message):
      settings.parse_train_args(bad)


def test_resolve_refuses_settings_of_another_agent_or_none(tmp_path):
  base = {'agent': 'dqn', 'env': 'gym:CartPole-v1', 'run_dir': str(tmp_path)}
  config = settings.cli.resolve({**base, 'dqn.batch_size': 8,
                                 'preset': 'small'})
  assert config.agent_config.batch_size == 8 and config.preset == 'small'
  for extra, message in (({'td3.batch_size': 8}, 'a td3 setting, but '
                          '--agent=dqn'),
                         ({'compression.nope': 1}, 'no setting '
                          '--compression.nope'),
                         ({'nope': 1}, 'no setting --nope'),
                         ({'preset': 'huge'}, "--preset='huge'")):
    with pytest.raises(settings.cli.UsageError, match=message):
      settings.cli.resolve({**base, **extra})


def test_docs_flag_tables_are_generated_from_the_fields():
  result = subprocess.run(
      [sys.executable, '-m', 'launch.flag_tables', '--check'], cwd=ROOT,
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
  assert result.returncode == 0, result.stdout + result.stderr[-2000:]
  assert 'stale: none' in result.stdout


def test_marker_replacement_refuses_missing_markers():
  with pytest.raises(ValueError, match='no <!-- flags:run: begin -->'):
    flag_tables.replace_between('text', 'run', 'body')
  text = 'a\n<!-- flags:x: begin -->\nold\n<!-- flags:x: end -->\nz'
  assert flag_tables.replace_between(text, 'x', 'new\n') == (
      'a\n<!-- flags:x: begin -->\nnew\n<!-- flags:x: end -->\nz')

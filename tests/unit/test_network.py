"""launch.runtime.network fails closed: a run is isolated, or refused, or on host
networking because --network=host said so; never because of the environment.
"""
import os
import subprocess
import sys

import pytest

from launch.runtime import handoff as handoff_lib
from launch.runtime import network

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


class _Execed(Exception):
  """Stands in for os.execvpe, which would replace the test process."""


@pytest.fixture(name='execs')
def _fake_exec(monkeypatch):
  calls = []

  def execvpe(file, command, environment):
    calls.append((file, command, environment))
    raise _Execed()
  monkeypatch.setattr(network.os, 'execvpe', execvpe)
  monkeypatch.delenv(network.ENV_VAR, raising=False)
  return calls


def test_auto_and_isolated_refuse_where_no_namespace_can_be_made(
    monkeypatch, execs):
  monkeypatch.setattr(network, 'unshare_prefix', lambda: None)
  for mode in ('auto', 'isolated'):
    with pytest.raises(network.IsolationError,
                       match=f'--network={mode}: .*pass --network=host'):
      network.enter(mode, 'settings')
  network.enter('host', 'settings')  # Only the explicit opt-out runs.
  assert not execs


def test_auto_reexecutes_in_a_namespace_marked_isolated(monkeypatch, execs):
  monkeypatch.setattr(network, 'unshare_prefix',
                      lambda: ['unshare', '--net'])
  handoff = {'agent': 'dqn', 'run_dir': 'a dir;x'}
  with pytest.raises(_Execed):
    network.enter('auto', handoff)
  (file, command, environment), = execs
  assert file == 'unshare'
  assert command == ['unshare', '--net', '--', sys.executable, '-m',
                     'launch.train']  # The settings travel as data.
  assert environment[network.ENV_VAR] == 'isolated'
  # What the re-executed launcher reads, once its namespace checks out.
  monkeypatch.setenv(handoff_lib.ENV_VAR, environment[handoff_lib.ENV_VAR])
  assert handoff_lib.received() == handoff
  assert handoff_lib.ENV_VAR not in os.environ  # Read once: nodes never see it.


def test_a_handoff_variable_naming_no_memfd_is_refused(monkeypatch, tmp_path):
  """Only a memfd a launcher wrote is read: a stale or forged variable is
  one clear error, not a pickle loaded from any descriptor."""
  with open(tmp_path / 'settings.pickle', 'wb') as handle:
    monkeypatch.setenv(handoff_lib.ENV_VAR, str(handle.fileno()))
    with pytest.raises(handoff_lib.HandoffError, match='unset it'):
      handoff_lib.received()
  monkeypatch.setenv(handoff_lib.ENV_VAR, 'x')
  with pytest.raises(handoff_lib.HandoffError):
    handoff_lib.received()


@pytest.mark.parametrize('value', ['host', 'isolated', ''])
def test_the_environment_cannot_turn_isolation_off(monkeypatch, execs,
                                                   value):
  """QUARL_NETWORK=host used to skip isolation; 'isolated' is believed only
  where no interface but loopback is up."""
  monkeypatch.setattr(network, 'interfaces_up', lambda: ['lo', 'eth0'])
  monkeypatch.setenv(network.ENV_VAR, value)
  assert network.current() == 'host'
  for mode in network.MODES:
    with pytest.raises(network.IsolationError, match='unset it'):
      network.enter(mode, 'settings')
  assert not execs


def test_a_verified_namespace_is_entered_once(monkeypatch, execs):
  monkeypatch.setattr(network, 'interfaces_up', lambda: ['lo'])
  monkeypatch.setenv(network.ENV_VAR, 'isolated')
  assert network.current() == 'isolated'
  network.enter('auto', 'settings')  # The re-executed launcher: no loop.
  assert not execs


def test_a_fresh_namespace_checks_out_as_isolated():
  """interfaces_up() reads the caller's namespace (sysfs would not)."""
  prefix = network.unshare_prefix()
  if prefix is None:
    pytest.skip('no private network namespace can be made here')
  probe = ('from launch.runtime import network; print(network.current()); '
           'network.bring_up_loopback(); print(network.interfaces_up(), '
           'network.current())')
  result = subprocess.run(
      prefix + ['--', sys.executable, '-c', probe], cwd=ROOT,
      env=dict(os.environ, **{network.ENV_VAR: 'isolated'}),
      capture_output=True, text=True, timeout=60, check=True)
  assert result.stdout.split('\n')[:2] == ['isolated', "['lo'] isolated"]

"""launch/runtime/supervisor.py on tiny real Launchpad programs (no RL): lp.stop()
becomes a stop request, stops come in two waves, a dying restartable node is
restarted up to --max_restarts and then fails the run."""
import os
import signal
import sys
import time

import cloudpickle
import launchpad as lp
import pytest

from launch.runtime import placement
from quarl import carbon
from launch.runtime import stop
from launch.runtime import summary as summary_lib
from launch.runtime import supervisor

# Child processes unpickle these functions by value (tests/ is not a
# package they can import).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _stamp(run_dir, name):
  with open(os.path.join(run_dir, f'{name}.exited'), 'w') as handle:
    handle.write(f'{time.time()}\n')


def _serve(run_dir, name, service=False):
  stop.watch(run_dir, in_process=False, service=service,
             before_exit=lambda: _stamp(run_dir, name), grace_s=0.5)
  while not stop.requested(0.2):
    pass
  time.sleep(5)  # The watcher ends the process first.


def _call_lp_stop(run_dir):
  stop.watch(run_dir, in_process=False, grace_s=0.5)
  time.sleep(1)
  lp.stop()
  time.sleep(30)


def _crash():
  raise RuntimeError('actor failed on purpose')


def _kill_my_fork_server():
  os.kill(os.getppid(), 9)
  time.sleep(30)


def _program(run_dir, last_node):
  program = lp.Program('supervised')
  with program.group('replay'):
    program.add_node(lp.PyNode(_serve, run_dir, 'replay', True))
  with program.group('learner'):
    program.add_node(lp.PyNode(_serve, run_dir, 'learner'))
  with program.group(last_node[0]):
    program.add_node(lp.PyNode(*last_node[1:]))
  return program


def _supervise(tmp_path, last_node, max_restarts=0, node_start='fork'):
  run_dir = str(tmp_path)
  program = _program(run_dir, last_node)
  log_dir = os.path.join(run_dir, 'logs', 'nodes')
  return supervisor.Supervisor(
      program, placement.LocalPlacement(node_start, {}, log_dir), run_dir, {},
      max_restarts, os.path.join(run_dir, 'node_errors.log')).run()


def _exit_time(tmp_path, name):
  return float((tmp_path / f'{name}.exited').read_text())


@pytest.mark.parametrize('node_start', ['fork', 'exec'])
def test_lp_stop_is_a_stop_request_and_services_stop_last(tmp_path,
                                                          node_start):
  outcome = _supervise(tmp_path, ('evaluator', _call_lp_stop, str(tmp_path)),
                       node_start=node_start)
  assert stop.reason(str(tmp_path)) == supervisor.LP_STOP_REASON
  assert outcome.reason == supervisor.LP_STOP_REASON
  assert outcome.hosts == {'replay': 'localhost', 'learner': 'localhost',
                           'evaluator': 'localhost'}
  assert _exit_time(tmp_path, 'learner') <= _exit_time(tmp_path, 'replay')


@pytest.mark.parametrize('node_start', ['fork', 'exec'])
def test_dying_actor_is_restarted_then_fails_the_run(tmp_path, node_start):
  outcome = _supervise(tmp_path, ('actor', _crash), max_restarts=2,
                       node_start=node_start)
  assert 'node actor_0 exited with code 1 (after 2 restarts)' in (
      outcome.reason)
  assert summary_lib.run_status(outcome.reason, budget_reached=True)[0] == (
      'failed')
  assert outcome.restarts['actor_0'] == 2
  log = (tmp_path / 'node_errors.log').read_text()
  assert 'actor_0 exited with code 1; restart 2/2' in log
  assert (tmp_path / 'logs' / 'nodes' / 'actor_0.log').read_text().count(
      'actor failed on purpose') == 3


def test_a_blocked_main_loop_keeps_the_lease(tmp_path, monkeypatch):
  """The launcher's main loop stuck past the lease timeout (here: starting
  its last node) must not look like a dead launcher to the nodes already
  running: the lease is renewed from a thread of its own."""
  start = supervisor._Node.start  # pylint: disable=protected-access

  def slow_start(node, beacons=()):
    if node.group == 'evaluator':
      time.sleep(stop.LEASE_TIMEOUT_S + 3)
    start(node, beacons)

  monkeypatch.setattr(supervisor._Node, 'start', slow_start)  # pylint: disable=protected-access
  outcome = _supervise(tmp_path, ('evaluator', _call_lp_stop, str(tmp_path)))
  assert outcome.reason == supervisor.LP_STOP_REASON, outcome.reason


def test_the_lease_renews_only_inside_its_block(tmp_path):
  run_dir = str(tmp_path)
  lease = stop.LeaseWatch(run_dir, timeout_s=2.0)
  with stop.LeaseRenewer(run_dir, period_s=0.1):
    for _ in range(40):  # The main thread busy, forty times the period.
      time.sleep(0.1)
      assert not lease.expired()
  time.sleep(3.0)
  assert lease.expired()


def test_the_lease_ignores_the_wall_clock(tmp_path, monkeypatch):
  """Renewal is a change of the lease's stamp, timed by the watcher's own
  monotonic clock: stamps 60 s in the future or past (a clock step, or a
  file server's clock) neither expire a live lease nor keep a dead one."""
  run_dir = str(tmp_path)
  now = [1000.0]
  monkeypatch.setattr(stop.time, 'monotonic', lambda: now[0])
  lease = stop.LeaseWatch(run_dir, timeout_s=10.0)
  stop.renew_lease(run_dir)
  lease_file = os.path.join(run_dir, 'LEASE')
  for step_s in (60, -60, 60):
    stamp = os.stat(lease_file).st_mtime + step_s
    os.utime(lease_file, (stamp, stamp))  # Renewed, by a stepped clock.
    now[0] += 9.0
    assert not lease.expired()
  now[0] += 11.0  # Then no renewal for longer than the timeout.
  assert lease.expired()


def test_a_dead_fork_server_fails_the_run(tmp_path):
  outcome = _supervise(tmp_path, ('actor', _kill_my_fork_server),
                       max_restarts=2)
  assert outcome.reason.startswith('failed: node '), outcome.reason
  assert 'exited with code -15' in outcome.reason, outcome.reason
  log = (tmp_path / 'logs' / 'nodes' / 'forkserver_localhost.log')
  assert 'imported launch.program' in log.read_text()


def test_a_stop_the_run_directory_cannot_take_still_ends_the_run(
    tmp_path, monkeypatch):
  """A read-only or inode-full run directory: STOP cannot be created, so
  no node hears the stop; the launcher still ends the run, as failed, and
  the waves kill the nodes that did not stop."""
  real_open = stop.os.open

  def refuse_stop_files(file_path, *args, **kwargs):
    if os.path.basename(file_path).startswith('STOP'):
      raise OSError(30, 'Read-only file system', file_path)
    return real_open(file_path, *args, **kwargs)

  monkeypatch.setattr(stop.os, 'open', refuse_stop_files)
  monkeypatch.setattr(supervisor, 'WAVE_TIMEOUT_S', 3.0)
  outcome = _supervise(tmp_path, ('actor', _crash), max_restarts=0)
  assert outcome.reason.startswith('failed: node actor_0 exited with code 1'), (
      outcome.reason)
  assert not (tmp_path / 'STOP').exists()


def _freeze_after_beating(run_dir):
  """Beats like every node (its CPU record, a thread of its own), then
  stops itself as SIGSTOP would: alive, silent."""
  carbon.NodeCpuRecorder(run_dir, 'learner', record_every_s=0.2)
  time.sleep(1.0)
  os.kill(os.getpid(), signal.SIGSTOP)


def test_a_frozen_learner_is_stalled_and_fails_the_run(tmp_path):
  run_dir = str(tmp_path)
  program = lp.Program('frozen')
  with program.group('replay'):
    program.add_node(lp.PyNode(_serve, run_dir, 'replay', True))
  with program.group('learner'):
    program.add_node(lp.PyNode(_freeze_after_beating, run_dir))
  log_dir = os.path.join(run_dir, 'logs', 'nodes')
  outcome = supervisor.Supervisor(
      program, placement.LocalPlacement('fork', {}, log_dir), run_dir, {},
      2, os.path.join(run_dir, 'node_errors.log'),
      beacons=lambda name, group: [
          (os.path.join(run_dir, 'node_cpu', f'{name}.json'), False)],
      stall_timeout_s=3.0).run()
  assert outcome.reason.startswith(
      'failed: node learner stalled (silent for'), outcome.reason
  assert outcome.reason.endswith('(which the run cannot lose)')

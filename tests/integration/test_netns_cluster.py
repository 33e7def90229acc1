"""tools/netns_cluster.sh: N namespaces that reach each other, and nothing
else, and a real three-machine Ray cluster on them running a program.

The multi-machine stand-in must connect its hosts to each other over TCP,
keep the host namespace (and so the network beyond it) out, leave the host's
own interfaces alone, and leave nothing behind after `down`.
"""
import errno
import json
import os
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import ROOT

SCRIPT = os.path.join(ROOT, 'tools', 'netns_cluster.sh')
PORT = 18765  # Any port: 10.213.0.1 exists only inside quarl-h1.
SERVER = f"""
import socket
server = socket.create_server(('10.213.0.1', {PORT}))
print('listening', flush=True)
while True:
  client, (peer, _) = server.accept()
  client.sendall(b'hello ' + peer.encode())
  client.close()
"""
CLIENT = f"""
import socket
print(socket.create_connection(('10.213.0.1', {PORT}), timeout=5).recv(64)
      .decode())
"""


def _run(*command):
  return subprocess.run(command, capture_output=True, text=True, check=False)


def _namespaces():
  return sorted(line.split()[0] for line in _run('ip', 'netns', 'list').stdout
          .splitlines() if line.startswith('quarl-'))


def _blackhole():
  return _run('ip', 'route', 'show', 'exact', '10.213.0.0/24', 'type',
              'blackhole').stdout.strip()


def _host_links():
  return sorted(line.split(':')[1].strip() for line in _run(
      'ip', '-o', 'link').stdout.splitlines())


def _skip_reason():
  if os.geteuid() != 0:
    return 'needs root: network namespaces, a bridge and a route'
  if _namespaces():
    return 'quarl-* namespaces exist already (a cluster in use); not touched'
  probe = _run('ip', 'netns', 'add', 'quarl-probe')
  if probe.returncode != 0:
    return f'ip netns add fails here: {probe.stderr.strip()}'
  _run('ip', 'netns', 'delete', 'quarl-probe')
  return None


def _in(host, *command):
  return ['ip', 'netns', 'exec', f'quarl-{host}', *command]


def _address(host):
  return f'10.213.0.{host[1:]}'


@pytest.fixture
def cluster():
  reason = _skip_reason()
  if reason:
    pytest.skip(reason)
  links = _host_links()
  try:
    up = _run(SCRIPT, 'up', '3')
    assert up.returncode == 0, up.stderr
    yield links
  finally:
    down = _run(SCRIPT, 'down')
    assert down.returncode == 0, down.stderr


def test_namespaces_reach_each_other_and_nothing_else(cluster):
  links = cluster
  assert _host_links() == links  # No interface added in the host namespace.
  assert _blackhole()
  server = subprocess.Popen(_in('h1', sys.executable, '-c', SERVER),
                            stdout=subprocess.PIPE, text=True)
  try:
    assert server.stdout.readline().strip() == 'listening'
    for name in ('h3', 'h2'):
      reply = subprocess.run(_in(name, sys.executable, '-c', CLIENT),
                             capture_output=True, text=True, timeout=30,
                             check=False)
      assert reply.stdout.strip() == 'hello ' + _address(name), reply.stderr
    with pytest.raises(OSError) as refused:
      socket.create_connection(('10.213.0.1', PORT), timeout=5)
    assert refused.value.errno == errno.EINVAL  # The blackhole route.
  finally:
    server.kill()
    server.wait()


def test_down_leaves_nothing(cluster):
  links = cluster
  assert _namespaces() == ['quarl-h1', 'quarl-h2', 'quarl-h3', 'quarl-hub']
  sleeper = subprocess.Popen(_in('h2', 'sleep', '600'))
  for _ in range(2):  # Idempotent.
    down = _run(SCRIPT, 'down')
    assert down.returncode == 0, down.stderr
    assert not _namespaces()
    assert not _blackhole()
    assert _host_links() == links
  assert sleeper.wait(timeout=30) is not None  # Ended, not left running.


@pytest.fixture
def ray_cluster():
  """Ray's head on h1 (replay, counter, learner, quantizer, evaluator), a
  worker for actors on h2 and on h3. Ray's files go to a short temporary
  directory: its socket paths must fit in 107 bytes."""
  reason = _skip_reason()
  if reason:
    pytest.skip(reason)
  temp = tempfile.mkdtemp(prefix='quarl-ray-')
  try:
    up = _run(SCRIPT, 'up', '3', '--ray', temp)
    assert up.returncode == 0, up.stderr
    yield temp
  finally:
    down = _run(SCRIPT, 'down')
    shutil.rmtree(temp, ignore_errors=True)
    assert down.returncode == 0, down.stderr


def _train_on_ray(run_dir, *flags):
  """launch.train as a driver on h1 (the host namespace cannot reach the
  cluster's range)."""
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2',
             RAY_ADDRESS='10.213.0.1:6379')
  return subprocess.Popen(
      _in('h1', sys.executable, '-m', 'launch.train', '--agent=d4pg',
          '--env=gym:Pendulum-v1', '--actor_precision=int8',
          '--num_actors=2', '--launch_type=ray', f'--run_dir={run_dir}',
          *flags), cwd=ROOT, env=env, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True)


def _run_processes(run_dir):
  """Pids of every process of the run on any machine: each node and fork
  server has the run's tmp directory as TMPDIR."""
  marker = f'TMPDIR={run_dir}/tmp'.encode()
  found = []
  for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
      with open(f'/proc/{pid}/environ', 'rb') as handle:
        if marker in handle.read().split(b'\0'):
          found.append(int(pid))
    except OSError:
      pass  # Gone, or not ours to read.
  return found


def _raylet_pid(host):
  for pid in _run('ip', 'netns', 'pids', f'quarl-{host}').stdout.split():
    try:
      with open(f'/proc/{pid}/comm') as handle:
        if handle.read().strip() == 'raylet':
          return int(pid)
    except OSError:
      pass
  raise AssertionError(f'no raylet in quarl-{host}')


def _wait_for(condition, timeout_s, what):
  deadline = time.monotonic() + timeout_s
  while not condition():
    assert time.monotonic() < deadline, f'no {what} within {timeout_s} s'
    time.sleep(1)


def test_ray_program_learns_across_three_machines_and_outlives_one(
    ray_cluster, tmp_path):
  """The nodes land where the cluster's resources say; an actor whose
  machine's raylet is killed restarts on the other actor machine; the run
  learns within an env-step budget. The run directory holds a space and a
  semicolon: no shell parses it anywhere."""
  run_dir = tmp_path / 'run dir;x'
  launcher = _train_on_ray(run_dir, '--max_actor_steps=15000',
                           '--max_seconds=600')
  try:
    evaluations = run_dir / 'evaluator.csv'
    _wait_for(lambda: evaluations.exists() and len(
        evaluations.read_text().splitlines()) >= 3, 300, 'evaluations')
    os.kill(_raylet_pid('h3'), signal.SIGKILL)
    output, _ = launcher.communicate(timeout=900)
  finally:
    if launcher.poll() is None:
      launcher.kill()
  assert launcher.returncode == 0, output[-3000:]
  summary = json.loads((run_dir / 'summary.json').read_text())
  assert summary['status'] == 'completed' and summary['network'] == 'ray'
  assert summary['actor_steps'] >= 15000
  for node in ('replay', 'counter', 'learner', 'quantizer', 'evaluator'):
    assert summary['hosts'][node] == '10.213.0.1', summary['hosts']
  # The actor of h3 moved to h2; the other was there all along.
  assert summary['hosts']['actor_0'] == summary['hosts']['actor_1'] == (
      '10.213.0.2'), summary['hosts']
  assert len(summary['restarts_by_node']) == 1, summary['restarts_by_node']
  log = (run_dir / 'node_errors.log').read_text()
  assert 'lost its host (Ray node 10.213.0.3' in log, log
  assert summary['best_return'] >= -400, summary['best_return']
  assert not _run_processes(run_dir)


def test_a_dead_driver_leaves_no_process_of_its_run(ray_cluster, tmp_path):
  run_dir = tmp_path / 'run'
  launcher = _train_on_ray(run_dir, '--max_actor_steps=500000',
                           '--max_seconds=900')  # Killed long before.
  try:
    _wait_for(lambda: (run_dir / 'actors.csv').exists() and len(
        (run_dir / 'actors.csv').read_text().splitlines()) >= 2, 300,
              'actor rows')
    assert len(_run_processes(run_dir)) >= 8  # The driver, 7 nodes, 3 fork servers.
    launcher.kill()
    launcher.wait()
    _wait_for(lambda: not _run_processes(run_dir), 60,
              'end of every node')
  finally:
    if launcher.poll() is None:
      launcher.kill()

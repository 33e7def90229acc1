"""tools/netns_cluster.sh: N namespaces that reach each other, and nothing else.

The multi-host stand-in must connect its hosts to each other over TCP, keep
the host namespace (and so the network beyond it) out, leave the host's own
interfaces alone, and leave nothing behind after `down`.
"""
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from launch.runtime import hosts

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


@pytest.fixture
def cluster(tmp_path):
  reason = _skip_reason()
  if reason:
    pytest.skip(reason)
  links = _host_links()
  hosts_file = str(tmp_path / 'hosts.yaml')
  try:
    up = _run(SCRIPT, 'up', '3', '--hosts-file', hosts_file)
    assert up.returncode == 0, up.stderr
    yield hosts_file, links
  finally:
    down = _run(SCRIPT, 'down')
    assert down.returncode == 0, down.stderr


def test_namespaces_reach_each_other_and_nothing_else(cluster):
  hosts_file, links = cluster
  plan = hosts.load(hosts_file, hosts.GROUPS)
  assert plan.host_for('learner', 0) == hosts.Host(
      'h1', '10.213.0.1', ('ip', 'netns', 'exec', 'quarl-h1'))
  assert [plan.host_for('actor', i).name for i in range(3)] == ['h2', 'h3',
                                                                'h2']
  assert _host_links() == links  # No interface added in the host namespace.
  assert _blackhole()
  server = subprocess.Popen(
      [*plan.hosts['h1'].prefix, sys.executable, '-c', SERVER],
      stdout=subprocess.PIPE, text=True)
  try:
    assert server.stdout.readline().strip() == 'listening'
    for name in ('h3', 'h2'):
      reply = subprocess.run([*plan.hosts[name].prefix, sys.executable, '-c',
                              CLIENT], capture_output=True, text=True,
                             timeout=30, check=False)
      assert reply.stdout.strip() == 'hello ' + plan.hosts[name].address, \
          reply.stderr
    with pytest.raises(OSError) as refused:
      socket.create_connection(('10.213.0.1', PORT), timeout=5)
    assert refused.value.errno == errno.EINVAL  # The blackhole route.
  finally:
    server.kill()
    server.wait()


def test_down_leaves_nothing(cluster):
  hosts_file, links = cluster
  assert _namespaces() == ['quarl-h1', 'quarl-h2', 'quarl-h3', 'quarl-hub']
  for _ in range(2):  # Idempotent.
    down = _run(SCRIPT, 'down')
    assert down.returncode == 0, down.stderr
    assert not _namespaces()
    assert not _blackhole()
    assert _host_links() == links


def test_program_across_three_hosts_learns_and_restarts_an_actor(
    cluster, tmp_path):
  """launch_type=hosts: every node in its namespace, found through
  Launchpad's address binding; an actor killed on h2 is restarted there."""
  hosts_file, _ = cluster
  run_dir = tmp_path / 'run'
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
  launcher = subprocess.Popen(
      [sys.executable, '-m', 'launch.train', '--agent=d4pg',
       '--env=gym:Pendulum-v1', '--actor_precision=int8', '--num_actors=2',
       # Learning is budgeted in env steps; seconds are only a backstop.
       '--max_actor_steps=12000', '--max_seconds=420',
       '--launch_type=hosts', f'--hosts_file={hosts_file}',
       f'--run_dir={run_dir}'], cwd=ROOT, env=env, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True)
  try:
    evaluations = run_dir / 'evaluator.csv'
    actor = run_dir / 'node_cpu' / 'actor_0.json'
    deadline = time.time() + 240
    while time.time() < deadline and not (
        actor.exists() and evaluations.exists() and
        len(evaluations.read_text().splitlines()) >= 3):
      time.sleep(1)
    os.kill(json.loads(actor.read_text())['pid'], signal.SIGKILL)
    output, _ = launcher.communicate(timeout=540)
  finally:
    if launcher.poll() is None:
      launcher.kill()
  assert launcher.returncode == 0, output[-3000:]
  summary = json.loads((run_dir / 'summary.json').read_text())
  assert summary['status'] == 'completed' and summary['network'] == 'hosts'
  assert summary['hosts']['learner'] == 'h1'
  assert {summary['hosts']['actor_0'], summary['hosts']['actor_1']} == {
      'h2', 'h3'}
  assert len(set(summary['hosts'].values())) == 3
  assert summary['restarts_by_node'] == {'actor_0': 1}
  baselines = summary['baseline_returns']
  best_baseline = max(baselines['random'], baselines['zero_action'])
  assert summary['best_return'] > best_baseline + 0.25 * abs(best_baseline)

"""Local runs live in a private network namespace (issue 11, part 1).

While a run is live, none of its Courier or Reverb ports is listed or
reachable in the host's namespace; they exist only inside the run's.
"""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from launch.runtime import network


def _descendants(pid):
  children = {}
  for entry in os.listdir('/proc'):
    if entry.isdigit():
      try:
        with open(f'/proc/{entry}/stat') as handle:
          parent = int(handle.read().rsplit(')', 1)[1].split()[1])
      except OSError:
        continue
      children.setdefault(parent, []).append(int(entry))
  found, todo = [], [pid]
  while todo:
    for child in children.get(todo.pop(), []):
      found.append(child)
      todo.append(child)
  return found


def _listening_ports(namespace_of=None):
  prefix = ['nsenter', f'--net=/proc/{namespace_of}/ns/net'] if namespace_of \
      else []
  out = subprocess.run(prefix + ['ss', '-ltnH'], capture_output=True,
                       text=True, check=True).stdout
  return {int(line.split()[3].rsplit(':', 1)[1])
          for line in out.splitlines() if line.strip()}


# Isolation needs unshare(CLONE_NEWNET): root, or unprivileged user
# namespaces. Where the kernel or container forbids both, the launcher
# refuses every mode but --network=host (tested below).
_NO_NAMESPACE = network.unshare_prefix() is None


@pytest.mark.skipif(
    _NO_NAMESPACE,
    reason='no private network namespace can be made here (unshare --net '
    'fails as this user and through a user namespace)')
def test_isolated_run_exposes_no_port_to_the_host(tmp_path):
  run_dir = tmp_path / 'run'
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
  env.pop('QUARL_NETWORK', None)
  launcher = subprocess.Popen(
      [sys.executable, '-m', 'launch.train', '--agent=d4pg',
       '--env=gym:Pendulum-v1', '--actor_precision=int8', '--num_actors=1',
       '--max_seconds=40', '--network=isolated', f'--run_dir={run_dir}'],
      cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
      text=True)
  try:
    deadline = time.time() + 240
    evaluations = run_dir / 'evaluator.csv'
    while time.time() < deadline and (
        not evaluations.exists() or
        len(evaluations.read_text().splitlines()) < 2):
      assert launcher.poll() is None, launcher.stdout.read()[-3000:]
      time.sleep(2)
    nodes = _descendants(launcher.pid)
    assert nodes
    host_namespace = os.readlink('/proc/self/ns/net')
    assert os.readlink(f'/proc/{launcher.pid}/ns/net') != host_namespace
    for pid in nodes:
      try:
        assert os.readlink(f'/proc/{pid}/ns/net') != host_namespace, pid
      except FileNotFoundError:
        pass  # Exited meanwhile (a probe child, say).
    run_ports = _listening_ports(namespace_of=launcher.pid)
    assert len(run_ports) >= 3  # Reverb, counter, learner, quantizer, ...
    host_ports = _listening_ports()
    host_listing = subprocess.run(['ss', '-ltnpH'], capture_output=True,
                                  text=True, check=True).stdout
    assert not any(f'pid={pid},' in host_listing for pid in nodes)
    for port in run_ports - host_ports:
      with socket.socket() as client:
        client.settimeout(2)
        assert client.connect_ex(('127.0.0.1', port)) != 0, port
  finally:
    output, _ = launcher.communicate(timeout=300)
  assert launcher.returncode == 0, output[-3000:]
  with open(run_dir / 'summary.json') as handle:
    summary = json.load(handle)
  assert summary['status'] == 'completed'
  assert summary['network'] == 'isolated'


@pytest.mark.parametrize('mode', ['auto', 'isolated'])
def test_no_namespace_means_no_run_unless_host_is_asked_for(tmp_path, mode):
  """Runs everywhere: with no unshare on PATH this machine can make no
  namespace either (the interpreter is started by its absolute path)."""
  run_dir = tmp_path / 'run'
  empty_path = tmp_path / 'bin'
  empty_path.mkdir()
  env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='3',
             PATH=str(empty_path))
  env.pop('QUARL_NETWORK', None)
  result = subprocess.run(
      [sys.executable, '-m', 'launch.train', f'--network={mode}',
       f'--run_dir={run_dir}'], cwd=ROOT, env=env, capture_output=True,
      text=True, timeout=120)
  assert result.returncode == 2, result.stderr[-3000:]
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and 'pass --network=host' in lines[0], lines
  assert not run_dir.exists()

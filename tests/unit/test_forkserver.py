"""The fork server: a node forked from it behaves as the interpreter its
command line would have started, and dies with the server."""
import os
import signal
import sys
import textwrap
import time

import psutil
import pytest

from launch.runtime import forkserver

NODE = textwrap.dedent('''
    import atexit, os, sys, tempfile
    print('argv', sys.argv[1:], 'env', os.environ.get('QUARL_TEST_VALUE'),
          'tmp', tempfile.gettempdir(), 'cwd', os.getcwd(), 'sid',
          os.getsid(0) == os.getpid(), flush=True)
    atexit.register(lambda: print('atexit ran', flush=True))
    action = sys.argv[1]
    if action == 'sleep':
      import time
      time.sleep(600)
    if action == 'raise':
      raise ValueError('node failed on purpose')
    sys.exit(int(sys.argv[2]))
''')


@pytest.fixture(scope='module')
def server(tmp_path_factory):
  logs = tmp_path_factory.mktemp('forkserver')
  started = forkserver.ForkServer(
      forkserver.SERVER_COMMAND, dict(os.environ),
      str(logs / 'server.log'), preexec_fn=forkserver.die_with_parent)
  yield started
  started.close()


def _alive(pid):
  try:
    return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
  except psutil.NoSuchProcess:
    return False


def _start(server, tmp_path, *args, env=None):
  script = tmp_path / 'node.py'
  script.write_text(NODE)
  log = tmp_path / 'node.log'
  process = server.start([sys.executable, str(script), *args],
                         dict(env or {}), str(tmp_path), str(log))
  return process, log


def test_a_node_gets_its_command_line_environment_and_exit_code(server,
                                                               tmp_path):
  process, log = _start(server, tmp_path, 'exit', '3', env={
      'QUARL_TEST_VALUE': 'forty-two', 'TMPDIR': str(tmp_path)})
  assert process.wait(60) == 3
  text = log.read_text()
  assert (f"argv ['exit', '3'] env forty-two tmp {tmp_path} cwd {tmp_path} "
          'sid True') in text
  assert 'atexit ran' in text  # A normal interpreter exit.


def test_an_exception_ends_the_node_with_code_1_and_its_traceback(server,
                                                                 tmp_path):
  process, log = _start(server, tmp_path, 'raise')
  assert process.wait(60) == 1
  assert 'ValueError: node failed on purpose' in log.read_text()
  # The server itself is untouched and starts the next node.
  again, _ = _start(server, tmp_path, 'exit', '0')
  assert again.wait(60) == 0


def test_kill_reports_the_signal(server, tmp_path):
  process, _ = _start(server, tmp_path, 'sleep')
  assert process.poll() is None
  process.kill()
  assert process.wait(60) == -signal.SIGKILL


def test_the_servers_death_ends_its_nodes(tmp_path):
  server = forkserver.ForkServer(
      forkserver.SERVER_COMMAND, dict(os.environ),
      str(tmp_path / 'server.log'))
  try:
    process, _ = _start(server, tmp_path, 'sleep')
    server._process.kill()  # pylint: disable=protected-access
    assert process.wait(60) == -signal.SIGTERM
    deadline = time.time() + 30
    while _alive(process.pid) and time.time() < deadline:
      time.sleep(0.1)
    assert not _alive(process.pid)
    with pytest.raises(forkserver.ForkServerError, match='exited'):
      _start(server, tmp_path, 'exit', '0')
  finally:
    server.close()

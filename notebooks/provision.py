"""The project's Python 3.10 stack beside a notebook kernel that is not it.

dm-launchpad has no wheels past Python 3.10 and Colab's kernel is newer, but
the notebooks only need the stack in the `python -m ...` processes they
start. So `ensure` returns an interpreter that has it: the kernel's own when
the kernel runs the project venv, else that venv's python, building the venv
first if needed with the Makefile's own recipe (`make .venv/.installed`: the
pins of requirements/lock.txt, --no-deps), from a Python 3.10 found here or
installed with uv. Standard library only: it runs in whatever kernel opened
the notebook.

Environment: QUARL_VENV picks the venv (default: the repository's .venv; one
holding .installed is reused as it is, never rebuilt); QUARL_PYTHON310 names
the Python 3.10 to build it from.
"""
import collections
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import time

# Variables that would point a 3.10 child at the kernel's own packages or
# plotting backend (Colab sets PYTHONPATH and MPLBACKEND for its kernel).
KERNEL_ONLY = ('PYTHONPATH', 'PYTHONHOME', 'MPLBACKEND')


def ensure(root):
  """Path of a python that runs the project (see the module docstring)."""
  venv = os.path.abspath(os.environ.get('QUARL_VENV') or
                         os.path.join(root, '.venv'))
  if os.path.realpath(sys.prefix) == os.path.realpath(venv):
    print(f'the kernel runs the project venv ({venv}): nothing to install')
    return sys.executable
  if not os.path.exists(os.path.join(venv, '.installed')):
    build(root, venv, find_python310())
  python = os.path.join(venv, 'bin', 'python')
  print(f'project stack: {python} (this kernel: Python '
        f'{sys.version.split()[0]}, which runs only pandas and matplotlib)')
  return python


def child_env():
  """This process's environment, safe for the project's interpreter."""
  env = {k: v for k, v in os.environ.items() if k not in KERNEL_ONLY}
  env.setdefault('MUJOCO_GL', 'disable')  # headless: no renderer
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  return env


def run(python, module, *args, check=True):
  """`python -m module args` in the working directory, output captured.

  With `check`, a non-zero exit raises with the tail of what it printed.
  """
  result = subprocess.run([python, '-m', module, *args], env=child_env(),
                          capture_output=True, text=True)
  if check and result.returncode:
    raise RuntimeError(f'python -m {module} exited {result.returncode}:\n'
                       f'{result.stdout[-2000:]}{result.stderr[-3000:]}')
  return result


def _is_python310(python):
  """True for a Python 3.10 that can make a venv with pip in it."""
  probe = ('import sys, ensurepip, venv; '
           'sys.exit(sys.version_info[:2] != (3, 10))')
  try:
    return subprocess.run([python, '-c', probe], env=child_env(),
                          capture_output=True).returncode == 0
  except OSError:
    return False


def _check(command):
  """Runs `command`; a failure raises with what it printed (which a kernel
  may not show: a child's output goes to the kernel's own streams)."""
  result = subprocess.run(command, capture_output=True, text=True,
                          env=child_env())
  if result.returncode:
    raise RuntimeError(f'`{" ".join(command)}` exited {result.returncode}:\n'
                       f'{result.stdout[-2000:]}{result.stderr[-3000:]}')


def _uv():
  """A uv command, installing uv into the kernel's environment if needed."""
  if shutil.which('uv'):
    return ['uv']
  if importlib.util.find_spec('uv') is None:
    print('installing uv (to fetch a Python 3.10) ...', flush=True)
    _check([sys.executable, '-m', 'pip', 'install', '-q', 'uv'])
  return [sys.executable, '-m', 'uv']


def _uv_find(*options):
  result = subprocess.run(_uv() + [*options, 'python', 'find', '3.10'],
                          capture_output=True, text=True, env=child_env())
  return result.stdout.strip() if result.returncode == 0 else None


def find_python310():
  """QUARL_PYTHON310, pyenv's, python3.10 on PATH or uv's; else uv installs
  one (a python-build-standalone download: needs the network)."""
  pyenv = glob.glob(os.path.expanduser('~/.pyenv/versions/3.10.*/bin/python'))
  candidates = [os.environ.get('QUARL_PYTHON310'),
                *sorted(pyenv, reverse=True), shutil.which('python3.10')]
  for python in candidates:
    if python and _is_python310(python):
      return python
  python = _uv_find()
  if not (python and _is_python310(python)):
    print('no usable Python 3.10 here; installing one with uv ...', flush=True)
    _check(_uv() + ['python', 'install', '3.10'])
    python = _uv_find('--python-preference', 'only-managed')
  if not (python and _is_python310(python)):
    raise RuntimeError('found no Python 3.10 that can create a venv; set '
                       'QUARL_PYTHON310 to one')
  return python


def build(root, venv, python310):
  """Runs the Makefile's venv recipe, printing progress instead of pip's log."""
  with open(os.path.join(root, 'requirements', 'lock.txt')) as handle:
    pins = sum(1 for line in handle if '==' in line)
  print(f'building {venv} from requirements/lock.txt ({pins} pinned packages, '
        f'with {python310}); a few minutes the first time', flush=True)
  command = ['make', '-C', root, f'VENV={venv}', f'PYTHON310={python310}',
             os.path.join(venv, '.installed')]
  # PIP_VERBOSE=1 cancels the recipe's -q, so each package shows up here.
  env = dict(child_env(), PIP_VERBOSE='1', PIP_PROGRESS_BAR='off',
             PIP_DISABLE_PIP_VERSION_CHECK='1')
  start = time.monotonic()
  tail = collections.deque(maxlen=40)
  progress = _Progress(pins, start)
  with subprocess.Popen(command, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, env=env) as make:
    for line in make.stdout:
      tail.append(line)
      progress.update(line.rstrip())
  if make.returncode:
    raise RuntimeError(f'`{" ".join(command)}` exited {make.returncode}:\n'
                       + ''.join(tail))
  print(f'project venv ready in {time.monotonic() - start:.0f} s', flush=True)


class _Progress:
  """Turns pip's per-package lines into a line per tenth of the lock."""

  def __init__(self, pins, start):
    self.pins, self.start, self.count = pins, start, 0

  def update(self, line):
    if ' -m venv ' in line or ' -m pip install ' in line:  # a recipe step
      self.count = 0
      self._print(line[line.index(' -m ') + 4:])
    elif line.startswith(('Collecting ', 'Processing ')):  # index, local file
      self.count += 1
      if self.count % max(1, self.pins // 10) == 0:
        name = os.path.basename(line.split()[1])
        self._print(f'fetched {self.count}/{self.pins} ({name})')
    elif line.startswith('Installing collected packages'):
      self._print(f'installing {len(line.split(","))} packages ...')
    elif line.startswith('Successfully installed'):
      self._print(f'installed {len(line.split()) - 2} packages')
    elif line.startswith(('ERROR', 'make: ***')):
      self._print(line)

  def _print(self, text):
    print(f'[{time.monotonic() - self.start:5.0f} s] {text}', flush=True)

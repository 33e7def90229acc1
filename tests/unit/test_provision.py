"""notebooks/provision.py: the parts a notebook test never reaches (it runs
with the project venv already built): which Python 3.10 is chosen, reuse of a
built venv, a failed build's report, the kernel-only variables."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'notebooks'))
import provision  # pylint: disable=g-import-not-at-top,wrong-import-position

PYENV = pathlib.Path.home() / '.pyenv' / 'versions'


def _pyenv_python(version):
  python = PYENV / version / 'bin' / 'python'
  if not python.exists():
    pytest.skip(f'no pyenv Python {version} here')
  return str(python)


def test_named_python310_is_chosen_first(monkeypatch):
  python = _pyenv_python('3.10.13')
  monkeypatch.setenv('QUARL_PYTHON310', python)
  assert provision.find_python310() == python


def test_a_named_python_that_is_not_310_is_passed_over(monkeypatch):
  monkeypatch.setenv('QUARL_PYTHON310', _pyenv_python('3.12.1'))
  chosen = provision.find_python310()
  assert chosen != os.environ['QUARL_PYTHON310']
  assert provision._is_python310(chosen)  # pylint: disable=protected-access


def test_a_built_venv_is_reused_without_building(monkeypatch, tmp_path):
  (tmp_path / '.installed').touch()
  monkeypatch.setenv('QUARL_VENV', str(tmp_path))
  monkeypatch.setattr(provision, 'build', pytest.fail)
  assert provision.ensure(str(ROOT)) == str(tmp_path / 'bin' / 'python')


def test_a_failed_build_raises_with_what_make_printed(tmp_path):
  with pytest.raises(RuntimeError) as failure:
    provision.build(str(ROOT), str(tmp_path / 'venv'), '/bin/false')
  assert 'exited 2' in str(failure.value)
  assert '/bin/false -m venv' in str(failure.value)
  assert not (tmp_path / 'venv' / '.installed').exists()


def test_children_do_not_inherit_the_kernels_paths(monkeypatch):
  monkeypatch.setenv('PYTHONPATH', '/colab/kernel/site')
  monkeypatch.setenv('MPLBACKEND', 'module://matplotlib_inline')
  env = provision.child_env()
  assert 'PYTHONPATH' not in env and 'MPLBACKEND' not in env
  assert env['MUJOCO_GL'] == 'disable'


def test_progress_prints_one_line_per_tenth_of_the_lock(capsys):
  progress = provision._Progress(20, start=0.0)  # pylint: disable=protected-access
  progress.update('/usr/bin/python3.10 -m pip install -q --no-deps -r x')
  for i in range(20):
    progress.update(f'Collecting package{i}==1.0')
  progress.update('Successfully installed a-1 b-2 c-3')
  lines = capsys.readouterr().out.splitlines()
  assert sum('fetched' in line for line in lines) == 10
  assert lines[-1].endswith('installed 3 packages')

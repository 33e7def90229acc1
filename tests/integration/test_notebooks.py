"""Executes every notebooks/*.ipynb top to bottom on a small budget, twice.

Kernel `project` is this interpreter (the project venv): the setup cell finds
it is the project's and installs nothing. Kernel `py312` is a Python 3.12 venv
holding only pandas, matplotlib, nbclient and ipykernel, as on Colab, where
the stack cannot install: its setup cell reuses this interpreter's venv
(QUARL_VENV) and every result comes from `python -m ...` processes under it.
Kernelspecs for both go into a temporary prefix put first on JUPYTER_PATH, so
nothing needs registering beforehand. QUARL_NB_BUDGET_S shrinks each
notebook's budget and QUARL_NB_RUN_ROOT keeps run directories out of the
repository.
"""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from conftest import run_module

nbformat = pytest.importorskip('nbformat')
nbclient = pytest.importorskip('nbclient')
kernelspec = pytest.importorskip('ipykernel.kernelspec')

NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, 'notebooks', '*.ipynb')))
KERNELS = {'project': 'quarl-test-project', 'py312': 'quarl-test-py312'}
# What each kernel's setup cell prints when it installs nothing.
SETUP_SAYS = {'project': 'nothing to install', 'py312': 'project stack: '}
PY312 = os.environ.get(
    'QUARL_TEST_PYTHON312',
    os.path.expanduser('~/.pyenv/versions/3.12.1/bin/python'))
PY312_PACKAGES = ('pandas', 'matplotlib', 'nbclient', 'ipykernel')
BUDGET_S = '25'
CELL_TIMEOUT_S = 420  # quickstart's training cell runs two Launchpad programs


def _diagnostics(notebook, run_root, limit=4000):
    """What a failed cell printed, and any node tracebacks its runs left."""
    printed = ''.join(output.get('text', '') for cell in notebook.cells
                      if cell.cell_type == 'code' for output in cell.outputs
                      if output.output_type == 'stream')
    parts = [f'--- notebook output (tail) ---\n{printed[-limit:]}']
    for path in sorted(glob.glob(str(run_root / '**' / 'node_errors.log'),
                              recursive=True)):
        with open(path) as handle:
            parts.append(f'--- {path} ---\n{handle.read()[-limit:]}')
    return '\n'.join(parts)


def _kernel_python(prefix, name):
    spec = prefix / 'share' / 'jupyter' / 'kernels' / name / 'kernel.json'
    return json.loads(spec.read_text())['argv'][0]


@pytest.fixture(scope='session')
def jupyter_prefix(tmp_path_factory):
    """A prefix holding a kernelspec for sys.executable."""
    prefix = tmp_path_factory.mktemp('jupyter_prefix')
    kernelspec.install(kernel_name=KERNELS['project'], prefix=str(prefix),
                       display_name='QuaRL-GST test kernel (project venv)')
    return prefix


@pytest.fixture(scope='session')
def py312_kernel(jupyter_prefix, tmp_path_factory):
    """A Python 3.12 venv with only the kernel's packages, as a kernelspec."""
    if not os.path.exists(PY312):
        pytest.skip(f'no Python 3.12 at {PY312} (set QUARL_TEST_PYTHON312)')
    if not os.path.exists(os.path.join(sys.prefix, '.installed')):
        pytest.skip(f'{sys.prefix} lacks the .installed mark of the venv the '
                    '3.12 kernel reuses (make .venv/.installed)')
    venv = tmp_path_factory.mktemp('py312') / 'venv'
    python = str(venv / 'bin' / 'python')
    for command in (
            [PY312, '-m', 'venv', str(venv)],
            [python, '-m', 'pip', 'install', '-q',
             '--disable-pip-version-check', *PY312_PACKAGES],
            [python, '-m', 'ipykernel', 'install', '--prefix',
             str(jupyter_prefix), '--name', KERNELS['py312'],
             '--display-name', 'QuaRL-GST test kernel (Python 3.12)']):
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, (command, result.stdout[-2000:],
                                        result.stderr[-3000:])
    return python


def test_notebooks_exist():
    names = {os.path.basename(path) for path in NOTEBOOKS}
    assert {'quickstart.ipynb', 'quantization.ipynb', 'gst.ipynb'} <= names


@pytest.mark.parametrize('module, flags', [
    ('launch.figures.quantization', ['--out=x', '--timing_s=soon']),  # absl
    ('launch.figures.gst', ['--out=x', '--block_size=3']),  # the module's
])
def test_figures_reject_bad_flags_in_one_line(module, flags):
    result = run_module(module, *flags, timeout=120)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        module.split('.')[-1] + ': error: '), lines


@pytest.mark.parametrize('path', NOTEBOOKS, ids=os.path.basename)
@pytest.mark.parametrize('kernel', list(KERNELS))
def test_notebook_runs(kernel, path, jupyter_prefix, request, tmp_path,
                       monkeypatch):
    if kernel == 'py312':
        python = request.getfixturevalue('py312_kernel')
        probe = 'import importlib.util as u; print(u.find_spec("tensorflow"))'
        assert subprocess.run([python, '-c', probe], capture_output=True,
                              text=True).stdout.strip() == 'None'
    else:
        python = sys.executable
    assert _kernel_python(jupyter_prefix, KERNELS[kernel]) == python
    monkeypatch.setenv('JUPYTER_PATH',
                       str(jupyter_prefix / 'share' / 'jupyter'))
    monkeypatch.setenv('JUPYTER_RUNTIME_DIR', str(tmp_path / 'runtime'))
    monkeypatch.setenv('QUARL_VENV', sys.prefix)
    monkeypatch.setenv('QUARL_NB_BUDGET_S', BUDGET_S)
    monkeypatch.setenv('QUARL_NB_RUN_ROOT', str(tmp_path / 'runs'))
    monkeypatch.setenv('MUJOCO_GL', 'disable')
    monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '2')
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:  # Stored without outputs, as committed.
        if cell.cell_type == 'code':
            assert not cell.outputs and cell.execution_count is None, path
    client = nbclient.NotebookClient(
        notebook, kernel_name=KERNELS[kernel], timeout=CELL_TIMEOUT_S,
        resources={'metadata': {'path': ROOT}})
    try:
        client.execute()
    except (nbclient.exceptions.CellExecutionError,
            nbclient.exceptions.CellTimeoutError) as error:
        pytest.fail(f'{error}\n{_diagnostics(notebook, tmp_path / "runs")}',
                    pytrace=False)
    outputs = [output for cell in notebook.cells if cell.cell_type == 'code'
               for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == 'error'], outputs
    setup = next(cell for cell in notebook.cells if cell.cell_type == 'code')
    said = ''.join(output.get('text', '') for output in setup.outputs)
    assert SETUP_SAYS[kernel] in said and 'building' not in said, said
    assert any('image/png' in o.get('data', {}) for o in outputs), 'no figure'

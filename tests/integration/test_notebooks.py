"""Executes every notebooks/*.ipynb top to bottom on a small budget.

The kernel is this interpreter: a kernelspec pointing at sys.executable is
written into a temporary prefix and put first on JUPYTER_PATH, so the test
needs no kernelspec installed beforehand (a clean venv works). The kernel
inherits the environment set here: QUARL_NB_BUDGET_S shrinks each notebook's
budget and QUARL_NB_RUN_ROOT keeps run directories out of the repository.
"""
import glob
import json
import os
import sys

import pytest

from conftest import ROOT

nbformat = pytest.importorskip('nbformat')
nbclient = pytest.importorskip('nbclient')
kernelspec = pytest.importorskip('ipykernel.kernelspec')

NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, 'notebooks', '*.ipynb')))
KERNEL_NAME = 'quarl-notebook-test'
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


@pytest.fixture(scope='module')
def kernel_dirs(tmp_path_factory):
    """A kernelspec for sys.executable under a fresh prefix."""
    prefix = tmp_path_factory.mktemp('jupyter_prefix')
    kernelspec.install(kernel_name=KERNEL_NAME, prefix=str(prefix),
                       display_name='QuaRL-GST test kernel')
    jupyter_dir = prefix / 'share' / 'jupyter'
    spec = json.loads((jupyter_dir / 'kernels' / KERNEL_NAME /
                       'kernel.json').read_text())
    assert spec['argv'][0] == sys.executable, spec
    return str(jupyter_dir)


def test_notebooks_exist():
    names = {os.path.basename(path) for path in NOTEBOOKS}
    assert {'quickstart.ipynb', 'quantization.ipynb', 'gst.ipynb'} <= names


@pytest.mark.parametrize('path', NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path, kernel_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv('JUPYTER_PATH', kernel_dirs)
    monkeypatch.setenv('JUPYTER_RUNTIME_DIR', str(tmp_path / 'runtime'))
    monkeypatch.setenv('QUARL_NB_BUDGET_S', BUDGET_S)
    monkeypatch.setenv('QUARL_NB_RUN_ROOT', str(tmp_path / 'runs'))
    monkeypatch.setenv('MUJOCO_GL', 'disable')
    monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '2')
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:  # Stored without outputs, as committed.
        if cell.cell_type == 'code':
            assert not cell.outputs and cell.execution_count is None, path
    client = nbclient.NotebookClient(
        notebook, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT_S,
        resources={'metadata': {'path': ROOT}})
    try:
        client.execute()
    except (nbclient.exceptions.CellExecutionError,
            nbclient.exceptions.CellTimeoutError) as error:
        pytest.fail(f'{error}\n{_diagnostics(notebook, tmp_path / "runs")}',
                    pytrace=False)
    errors = [output for cell in notebook.cells if cell.cell_type == 'code'
              for output in cell.outputs if output.output_type == 'error']
    assert not errors, errors

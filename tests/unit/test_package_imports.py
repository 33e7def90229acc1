"""Architecture checks: the three packages import, and `quarl` (the library
half) never pulls in Launchpad, which only `launch/` programs may use.

Import checks run in a fresh interpreter so modules imported by other tests
in the same pytest process cannot hide (or fake) a dependency.
"""
import ast
import os
import pathlib
import subprocess
import sys
import textwrap

# The directory that holds quarl/, agents/ and launch/: the repository root,
# or the runfiles root under Bazel (deliberately not resolving symlinks).
ROOT = pathlib.Path(os.path.abspath(__file__)).parents[2]


def _run_fresh(code):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    env.setdefault('MUJOCO_GL', 'disable')
    proc = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)],
        cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (
        f'exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}')
    return proc.stdout


def test_packages_import():
    out = _run_fresh('''
        import agents, launch, quarl
        print(quarl.__name__, agents.__name__, launch.__name__)
    ''')
    assert out.split() == ['quarl', 'agents', 'launch']


def test_packages_come_from_this_tree():
    out = _run_fresh('''
        import os, agents, launch, quarl
        for m in (quarl, agents, launch):
            print(os.path.dirname(os.path.dirname(os.path.abspath(m.__file__))))
    ''')
    assert {pathlib.Path(line) for line in out.split()} == {ROOT}


def test_quarl_does_not_import_launchpad():
    _run_fresh('''
        import sys
        import quarl
        assert 'launchpad' not in sys.modules, 'import quarl pulled in launchpad'
    ''')


def _imported_modules(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_no_quarl_module_imports_launchpad_or_launch():
    # Static, over every module of the library: quarl's own code never names
    # Launchpad nor the `launch` programs. (A dynamic check of every
    # submodule is not possible: Acme 0.4's own `import acme` loads
    # acme.utils.signals, which imports launchpad.)
    sources = sorted((ROOT / 'quarl').rglob('*.py'))
    assert sources
    offenders = [
        f'{path.relative_to(ROOT)}: import {name}'
        for path in sources
        for name in _imported_modules(path)
        if name.split('.')[0] in ('launchpad', 'launch')
    ]
    assert not offenders, '\n'.join(offenders)

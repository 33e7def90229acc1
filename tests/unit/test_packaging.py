"""The project builds as a wheel through pyproject.toml's build backend (no
legacy setup.py path), and launch.train runs from that wheel."""
import glob
import os
import shutil
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def test_wheel_builds_and_launch_train_runs_from_it(tmp_path):
    # A copy of what the wheel is built from, so the build leaves nothing in
    # the work tree (build/, egg-info).
    src = tmp_path / 'src'
    src.mkdir()
    for name in ('setup.py', 'pyproject.toml'):
        shutil.copy(os.path.join(ROOT, name), src / name)
    for package in ('quarl', 'agents', 'launch'):
        shutil.copytree(os.path.join(ROOT, package), src / package,
                        ignore=shutil.ignore_patterns('__pycache__', 'BUILD'))
    built = subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '--no-deps',
         '--no-build-isolation', '-w', str(tmp_path / 'dist'), str(src)],
        capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    assert 'legacy' not in (built.stdout + built.stderr).lower()
    [wheel] = glob.glob(str(tmp_path / 'dist' / 'quarl_gst-*.whl'))
    site = tmp_path / 'site'
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(site)
    for module in ('launch/train.py', 'quarl/__init__.py', 'agents/__init__.py'):
        assert module in names, module
    assert any(name.endswith('entry_points.txt') for name in names)
    # From the unpacked wheel, not the work tree: PYTHONPATH comes before the
    # editable install's path, and the cwd is neither.
    env = dict(os.environ, PYTHONPATH=str(site), MUJOCO_GL='disable',
               TF_CPP_MIN_LOG_LEVEL='3')
    where = subprocess.run(
        [sys.executable, '-c', 'import launch.train, quarl, agents; '
         'print(launch.train.__file__)'],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr
    helped = subprocess.run(
        [sys.executable, '-m', 'launch.train', '--help'],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert '--agent' in helped.stdout + helped.stderr

"""Committed result tables are what their scripts write from the committed
run files: a run added or a table edited by hand without `make results`
fails here."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _rewritten(tmp_path, relative, command):
    """The table files `command` writes into a copy of `relative`."""
    copy = tmp_path / os.path.basename(relative)  # The name a table shows.
    shutil.copytree(os.path.join(ROOT, relative), copy)
    result = subprocess.run(
        [sys.executable, '-m', *[arg.replace('DIR', str(copy))
                                 for arg in command], '--tables_only'],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, MUJOCO_GL='disable'))
    assert result.returncode == 0, result.stderr[-3000:]
    return copy


def _comparable(text, directory):
    # The directory a table names and the command line it records are where
    # it was written, not what it says.
    text = text.replace(directory, 'DIR')
    return re.sub(r'^Command: .*$', 'Command:', text, flags=re.M)


@pytest.mark.parametrize('relative, table, command', [
    ('docs/results/gst_td3paper', 'td3.md',
     ['launch.reproduce_gst', '--results_dir=DIR']),
    ('docs/results/gst_a2c_standard', 'a2c.md',
     ['launch.reproduce_gst', '--agent=a2c', '--results_dir=DIR']),
    ('docs/results/gst_ppo_football', 'ppo.md',
     ['launch.reproduce_gst', '--agent=ppo', '--results_dir=DIR']),
    ('docs/results/gst_ppo_breakout', 'ppo.md',
     ['launch.reproduce_gst', '--agent=ppo', '--results_dir=DIR']),
    ('docs/results/ppo_reference', 'results.md',
     ['benchmarks.ppo_reference', '--results_dir=DIR']),
    ('docs/results/actorq_regimes/paper_tasks', 'results.md',
     ['launch.reproduce_actorq', '--regimes=authors', '--seeds=0,1',
      '--precisions=fp32_tf,fp32,fp16,int8', '--results_dir=DIR',
      '--tasks=' + ','.join(f'd4pg:dm_control:{task}' for task in (
          'finger:spin', 'walker:stand', 'hopper:stand', 'reacher:hard',
          'cheetah:run', 'humanoid:stand'))
      + ',dqn:gym:Acrobot-v1,dqn:gym:MountainCar-v0']),
])
def test_committed_table_is_what_the_script_writes(tmp_path, relative, table,
                                                   command):
    copy = _rewritten(tmp_path, relative, command)
    with open(os.path.join(ROOT, relative, table)) as handle:
        committed = _comparable(handle.read(), relative)
    with open(copy / table) as handle:
        written = _comparable(handle.read(), str(copy))
    assert written == committed, (
        f'{relative}/{table} is stale: run `make results` and commit it')

"""Integration tests launch real Launchpad programs; all are marked."""
import csv
import json
import os
import subprocess
import sys

import pytest

from launch.runtime import network

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

# launch.train refuses --network=auto where no private network namespace can
# be made; tests that are not about the network opt out there.
NETWORK_FLAGS = () if network.unshare_prefix() else ('--network=host',)


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.integration)


def run_module(module, *args, timeout=600):
    """Runs `python -m module args` from the repo root; returns the result."""
    env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='2')
    return subprocess.run([sys.executable, '-m', module, *args], cwd=ROOT,
                          env=env, capture_output=True, text=True,
                          timeout=timeout)


def load_json(path):
    with open(path) as handle:
        return json.load(handle)


CONTRACT_FILES = ('config.json', 'evaluator.csv', 'actors.csv',
                  'quantizer.csv', 'summary.json', 'emissions.csv')


def rows(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def train_and_check_contract(run_dir, *flags, timeout=600):
    """Runs launch.train to completion; returns its summary.json."""
    result = run_module('launch.train', *flags, *NETWORK_FLAGS,
                        f'--run_dir={run_dir}', timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for name in CONTRACT_FILES:
        assert (run_dir / name).exists(), name
    summary = load_json(run_dir / 'summary.json')
    assert summary['status'] == 'completed'
    return summary

"""Integration tests launch real Launchpad programs; all are marked."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


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

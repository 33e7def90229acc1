"""Fault tests break real Launchpad programs; they share the integration
tests' helpers (loaded under their own name: both files are `conftest`)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    'integration_conftest',
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                 'integration', 'conftest.py'))
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)

ROOT = _integration.ROOT
load_json = _integration.load_json
rows = _integration.rows
train_and_check_contract = _integration.train_and_check_contract

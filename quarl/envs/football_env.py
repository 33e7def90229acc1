"""Google Research Football (`football:SCENARIO`), `simple115v2` observations.

The engine is built for Debian's Python 3.11 and its Boost.Python (`make
football` installs it into .cache/football/venv), which the 3.10 stack
cannot import, so each environment runs in a child process under that
Python (remote_env). `QUARL_FOOTBALL_PYTHON` names another interpreter.
"""
import os
from typing import List

import dm_env

from quarl.envs import remote_env
from quarl.envs.errors import EnvironmentBuildError

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEFAULT_PYTHON = os.path.join(_ROOT, '.cache', 'football', 'venv', 'bin',
                              'python')

# gfootball 2.10.2's scenarios (gfootball/scenarios/).
SCENARIOS = (
    '11_vs_11_competition', '11_vs_11_easy_stochastic',
    '11_vs_11_hard_stochastic', '11_vs_11_kaggle', '11_vs_11_stochastic',
    '1_vs_1_easy', '5_vs_5', 'academy_3_vs_1_with_keeper', 'academy_corner',
    'academy_counterattack_easy', 'academy_counterattack_hard',
    'academy_empty_goal', 'academy_empty_goal_close',
    'academy_pass_and_shoot_with_keeper',
    'academy_run_pass_and_shoot_with_keeper', 'academy_run_to_score',
    'academy_run_to_score_with_keeper', 'academy_single_goal_versus_lazy',
)


def known_targets() -> List[str]:
  return list(SCENARIOS)


def football_python() -> str:
  return os.environ.get('QUARL_FOOTBALL_PYTHON', DEFAULT_PYTHON)


def load(scenario: str, seed: int, training: bool) -> dm_env.Environment:
  """Scenario `scenario` as football_engine.make builds it, in a child
  process."""
  del training  # The same environment for training and evaluation.
  python = football_python()
  if not os.access(python, os.X_OK):
    raise EnvironmentBuildError(
        f'football:{scenario} needs the Football engine: run `make '
        f'football` (or set QUARL_FOOTBALL_PYTHON); {python} is missing')
  try:
    return remote_env.RemoteEnvironment(
        python, 'football_engine:make', dict(scenario=scenario, seed=seed),
        name=f'football:{scenario}')
  except remote_env.EnvironmentServerError as error:
    raise EnvironmentBuildError(str(error)) from error

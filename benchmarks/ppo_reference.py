r"""Our PPO against a PPO someone else wrote, on the same Atari game.

The reference is Stable-Baselines3's PPO with the RL Zoo's Atari
hyper-parameters (benchmarks/ppo_reference_sb3.py), installed by this script
into a virtualenv of its own on Python 3.11 from the pins in
requirements/ppo_reference.txt (nothing of SB3 is committed; the project's
stack never imports it). Ours is `launch.train --agent=ppo --preset=paper`
(8 trajectories x 128 steps per update) with 8 actors, as SB3 steps 8 envs:
arm `ours` with the stock TF actor in fp32, so the arms differ in the PPO
implementation alone, and `ours_int8` with the int8 actors the GST
reproduction runs. Ours takes SB3's update: 4 epochs of 4 shuffled
minibatches, learning rate and clip annealed to 0 over the budget. All play
the same ALE game with the same frame skip, no sticky actions, no-op starts,
life-loss episode ends in training and 108,000-frame games, and are
evaluated the same way: full games played by sampling the policy (our
evaluator's protocol: a greedy near-uniform policy can stall Breakout for a
whole game) every --eval_every env steps. Every arm runs every seed at the
same env-step budget.

Each finished run's evaluator.csv and summary.json go to --results_dir
(committed with --commit_results), and the table and plot are written from
those files alone, so a sweep resumes from a checkout.

  python -m benchmarks.ppo_reference --seeds=0 --budget=1000000
  python -m benchmarks.ppo_reference --background --commit_results \
      --results_dir=docs/results/ppo_reference
  python -m benchmarks.ppo_reference --tables_only \
      --results_dir=docs/results/ppo_reference
"""
import functools
import os
import shutil
import subprocess
from typing import List

from absl import flags

from agents.ppo import config as ppo_config
from benchmarks import learning_curves
from launch.analysis import gst_plan
from launch import cli
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import sweep
from quarl.envs import atari_env
from quarl.envs import names
from quarl.envs.errors import EnvironmentNameError

# Arm -> our actors' precision (None: the reference).
ARMS = {'sb3': None, 'ours': 'fp32_tf', 'ours_int8': 'int8'}
REQUIREMENTS = os.path.join(sweep.ROOT, 'requirements', 'ppo_reference.txt')
SB3_SCRIPT = os.path.join(sweep.ROOT, 'benchmarks', 'ppo_reference_sb3.py')
RESULT_FILES = (run_dir_lib.SUMMARY_JSON, run_dir_lib.EVALUATOR_CSV)
# Env steps per update of our PPO's learner under --preset=paper, so an
# evaluation every E env steps is one every E / ENV_STEPS_PER_UPDATE
# learner steps.
ENV_STEPS_PER_UPDATE = (ppo_config.PRESETS['paper']['batch_size']
                        * ppo_config.PRESETS['paper']['unroll_length'])

_SEEDS = flags.DEFINE_list('seeds', ['0', '1', '2'], 'Seeds; every arm '
                           'runs each.')
_ARMS = flags.DEFINE_list('arms', ['sb3', 'ours'], f'Of {", ".join(ARMS)}.')
_BUDGET = flags.DEFINE_integer('budget', 1_000_000,
                               'Env steps (4 frames each) per run.')
_GAME = flags.DEFINE_string('game', 'Breakout', 'ALE game (CamelCase).')
_EVAL_EVERY = flags.DEFINE_integer(
    'eval_every', 102_400, 'Env steps between evaluations (a multiple of '
    f'{ENV_STEPS_PER_UPDATE}, our learner\'s update).')
_EVAL_EPISODES = flags.DEFINE_integer('eval_episodes', 3,
                                      'Greedy games per evaluation.')
_NUM_ACTORS = flags.DEFINE_integer(
    'num_actors', 8, 'Our actor processes (SB3 steps 8 envs).')
_OUT = flags.DEFINE_string('out_dir', 'runs/ppo_reference',
                           'Run directories.')
_RESULTS = flags.DEFINE_string(
    'results_dir', None, "Each finished run's small files, the table and "
    'the plot; default: OUT_DIR/results.')
_VENV = flags.DEFINE_string(
    'reference_venv', '.cache/ppo_reference/venv',
    'The reference\'s virtualenv (made here when missing).')
_PYTHON = flags.DEFINE_string(
    'reference_python', None, 'Python 3.11 for the reference\'s virtualenv '
    '(default: python3.11 on PATH or under ~/.pyenv).')
_COMMIT = flags.DEFINE_bool('commit_results', False,
                            "git-commit each finished run's small files.")
_BACKGROUND = flags.DEFINE_bool(
    'background', False, "Run at Linux's idle scheduling class (budgets are "
    'env steps: only wall time grows).')
_TABLES_ONLY = flags.DEFINE_bool('tables_only', False,
                                 'Run nothing: write the table and plot.')


def reference_python(venv: str) -> str:
  """The reference virtualenv's interpreter, installing it first if needed.

  Raises:
    cli.UsageError: no Python 3.11, or the install failed (pip's last line).
  """
  python = os.path.join(venv, 'bin', 'python')
  marker = os.path.join(venv, '.installed')
  if os.path.exists(marker):
    with open(marker) as handle, open(REQUIREMENTS) as pins:
      if handle.read() == pins.read():
        return python
  base = _PYTHON.value or shutil.which('python3.11') or os.path.expanduser(
      '~/.pyenv/versions/3.11.7/bin/python')
  if not os.path.exists(base) and not shutil.which(base):
    raise cli.UsageError('no Python 3.11 for the reference (SB3 runs on '
                         'torch, not in the project\'s stack); pass '
                         '--reference_python')
  print(f'[ppo_reference] installing the reference into {venv} '
        f'({REQUIREMENTS})', flush=True)
  for command in ([base, '-m', 'venv', '--clear', venv],
                  [python, '-m', 'pip', 'install', '-q', '--no-deps', '-r',
                   REQUIREMENTS]):
    result = subprocess.run(command, capture_output=True, text=True,
                            check=False)
    if result.returncode:
      last = (result.stderr or result.stdout).strip().splitlines()[-1:]
      raise cli.UsageError(f'{" ".join(command[:4])} failed: {last}')
  shutil.copyfile(REQUIREMENTS, marker)
  return python


flags.register_validator('arms', lambda arms: set(arms) <= set(ARMS),
                         f'want arms of {", ".join(ARMS)}')
flags.register_validator(
    'eval_every', lambda steps: steps > 0 and not steps % ENV_STEPS_PER_UPDATE,
    f'want a positive multiple of {ENV_STEPS_PER_UPDATE}')


def run_dir(root: str, game: str, arm: str, seed: str) -> str:
  return os.path.join(root, game, arm, f'seed_{seed}')


def run_sb3(python: str, path: str, seed: str) -> int:
  """One SB3 run to its end, resumed from its last evaluation's checkpoint
  if it stopped early."""
  os.makedirs(path, exist_ok=True)
  with open(path + '.log', 'a') as log:
    return subprocess.run(
        [python, SB3_SCRIPT, f'--run_dir={path}', f'--seed={seed}',
         f'--budget={_BUDGET.value}',
         f'--game={atari_env.rom_id(_GAME.value)}',
         f'--eval_every={_EVAL_EVERY.value}',
         f'--eval_episodes={_EVAL_EPISODES.value}'],
        stdout=log, stderr=subprocess.STDOUT, check=False,
        preexec_fn=functools.partial(sweep.child_setup,
                                     _BACKGROUND.value)).returncode


def ours(path: str, arm: str, seed: str):
  """Our PPO's RunConfig for `arm` and `seed`."""
  return cli.resolve({
      'agent': 'ppo', 'env': f'ale:{_GAME.value}', 'preset': 'paper',
      'actor_precision': ARMS[arm], 'num_actors': _NUM_ACTORS.value,
      'seed': int(seed), 'max_actor_steps': _BUDGET.value,
      # The RL Zoo anneals the learning rate and clip over the whole run.
      'ppo.anneal_steps': _BUDGET.value // ENV_STEPS_PER_UPDATE,
      # A backstop only: the budget is env steps.
      'max_seconds': _BUDGET.value / 50.0,
      'eval_every': _EVAL_EVERY.value // ENV_STEPS_PER_UPDATE,
      'eval_episodes': _EVAL_EPISODES.value, 'run_dir': path,
      # ours_int8's actors get models as the GST reproduction's PPO arms'.
      'publish_period': gst_plan.AGENT_DEFAULTS['ppo']['train'][
          'publish_period']})


def write_tables(results_dir: str) -> List[str]:
  """results.md and plots/return.png from the recorded runs; their paths."""
  found = learning_curves.curves(results_dir, _GAME.value, ARMS,
                                 ENV_STEPS_PER_UPDATE)
  os.makedirs(os.path.join(results_dir, 'plots'), exist_ok=True)
  learning_curves.plot(
      found, _BUDGET.value, _EVAL_EVERY.value,
      f'PPO on {_GAME.value}: ours vs Stable-Baselines3',
      os.path.join(results_dir, 'plots', 'return.png'))
  with open(os.path.join(results_dir, 'results.md'), 'w') as handle:
    handle.write(
        f'# PPO on ale:{_GAME.value}: ours against Stable-Baselines3\n\n'
        'Written by `python -m benchmarks.ppo_reference` from the runs '
        'recorded here. Return of full games played by sampling the '
        f'policy (mean of {_EVAL_EPISODES.value}), evaluated after the '
        'learner has trained on the row\'s env steps (the evaluation '
        'nearest them, within half an interval): mean [min, max] over '
        'seeds. sb3: Stable-Baselines3 '
        'PPO, RL Zoo Atari hyper-parameters; ours: `launch.train '
        '--agent=ppo --preset=paper`, 8 actors, stock fp32 TF actors '
        '(ours_int8: int8 LiteRT actors). Same env settings '
        '(benchmarks/ppo_reference_sb3.py).\n\n'
        f'{learning_curves.table(found, _BUDGET.value, _EVAL_EVERY.value)}\n\n'
        'Plot: `plots/return.png`.\n')
  return sweep.tables_in(results_dir)


def main(argv):
  del argv
  game = _GAME.value
  results_dir = _RESULTS.value or os.path.join(_OUT.value, 'results')
  pending = [] if _TABLES_ONLY.value else [
      (seed, arm) for seed in _SEEDS.value for arm in _ARMS.value
      if run_dir_lib.finished_status(run_dir(results_dir, game, arm, seed))
      != 'completed']
  try:
    names.validate_environment_name(f'ale:{game}')
    python = reference_python(_VENV.value) if any(
        ARMS[arm] is None for _, arm in pending) else None
    # Every run of ours resolved (and so checked) before the first starts.
    configs = {(seed, arm): ours(run_dir(_OUT.value, game, arm, seed), arm,
                                 seed)
               for seed, arm in pending if ARMS[arm] is not None}
  except (cli.UsageError, EnvironmentNameError) as error:
    cli.usage_exit('ppo_reference', str(error))
  for index, (seed, arm) in enumerate(pending):
    path = run_dir(_OUT.value, game, arm, seed)
    print(f'[ppo_reference] run {index + 1}/{len(pending)}: {arm} seed '
          f'{seed} -> {path}', flush=True)
    if ARMS[arm] is None:
      code = run_sb3(python, path, seed)
    else:
      code, = sweep.run_all([configs[seed, arm]],
                            background=_BACKGROUND.value)
    if code:
      print(f'[ppo_reference]   exit code {code}; see {path}.log',
            flush=True)
    sweep.record(path, run_dir(results_dir, game, arm, seed), RESULT_FILES,
                 _COMMIT.value and f'ppo_reference: {arm} seed {seed}',
                 refresh=lambda: write_tables(results_dir))
  write_tables(results_dir)
  with open(os.path.join(results_dir, 'results.md')) as handle:
    print(handle.read(), flush=True)


if __name__ == '__main__':
  cli.run_main(main, 'ppo_reference')

"""What reproduce_gst runs: its arms, their schedules and launch.train
flags, and how a finished run's small files are kept (they are what the
tables are made from, launch/analysis/gst_report.py)."""
import json
import os
from typing import Dict, List, NamedTuple

import agents
from launch import cli
from launch.config import RunConfig
from launch.runtime import run_dir as run_dir_lib
from quarl import envs as quarl_envs

# name -> launch.train compression settings. Pruning groups match the GST
# arm they are compared with: 'prune' (4x4) against B=4, 'prune_B2' against
# B=2.
def _gst(block_size: int, s_shift: float, transform: str = 'none') -> Dict:
  return {'compression.kind': 'gst', 'compression.block_size': block_size,
          'compression.s_shift': s_shift, 'compression.transform': transform}


METHODS = {
    'dense': {'compression.kind': 'none'},
    'prune': {'compression.kind': 'prune', 'compression.block_size': 4},
    'prune_B2': {'compression.kind': 'prune', 'compression.block_size': 2},
    'gst_B2_s0.25': _gst(2, 0.25),
    'gst_B2_s1.0': _gst(2, 1.0),
    'gst_B4_s0.25': _gst(4, 0.25),
    'gst_B4_s1.0': _gst(4, 1.0),
    'gst_B8_s1.0': _gst(8, 1.0),
    # The block-size transforms (docs/architecture.md), from B=4.
    'gst_proj_s0.25': _gst(4, 0.25, 'projection'),
    'gst_b4f_b2_s0.25': _gst(4, 0.25, 'b4_friendly_b2'),
    'gst_b4f_b4_s0.25': _gst(4, 0.25, 'b4_friendly_b4'),
    # Sparse training from scratch (quarl/compression/sparse_training.py):
    # single weights (the field's standard), and 4x4 groups like GST's.
    'static': {'compression.kind': 'static',
               'compression.granularity': 'element'},
    'rigl': {'compression.kind': 'rigl', 'compression.granularity': 'element'},
    'static_B4': {'compression.kind': 'static', 'compression.block_size': 4},
    'rigl_B4': {'compression.kind': 'rigl', 'compression.block_size': 4},
}
# The arms GST's lead is measured against (prefixes of METHODS' names).
BASELINES = ('prune', 'static', 'rigl')

# The standard schedule's start and end, as fractions of the learner steps
# a run's budget makes (rigl's SAC MuJoCo config: 200k to 800k of 1M).
STANDARD_FRACTIONS = (0.2, 0.8)
SCHEDULES = ('standard', 'early')

# Per agent, the defaults of the flags below that are left unset, the
# 'early' schedule in learner steps, and the launch.train settings every
# run gets (`train`). On-policy learners consume exactly
# batch x unroll env steps per update (A2C 4 x 16, PPO 8 x 16); their
# actors (A2C four, PPO's on Football two: its engine is slow) make a
# batch's trajectories come from different games, and a publish every 10
# learner steps keeps the acting model close behind: PPO's int8 actors then
# play data about as old (the learner log's policy_lag) as the stock TF
# actors that pull weights once per trajectory (benchmarks/ppo_reference).
# TD3 runs the TD3 paper's setting (`--preset=paper`: agents/td3/config.py)
# so that its dense arm can be held to the TD3 authors' learning curve.
AGENT_DEFAULTS = {
    'td3': dict(envs=['gymnasium:HalfCheetah-v5'],
                methods=['dense', 'prune', 'gst_b4f_b2_s0.25'],
                max_actor_steps=150_000, max_seconds=4000.0,
                seeds=['0', '1', '2'], early=(5000, 90_000), eval_every=5000,
                train=dict(num_actors=1, publish_period='5s',
                           preset='paper')),
    'a2c': dict(envs=['ale:Breakout'],
                methods=['dense', 'gst_B2_s1.0', 'prune_B2'],
                max_actor_steps=400_000, max_seconds=3000.0, seeds=['0'],
                early=(500, 4500), eval_every=200,
                train=dict(num_actors=4, publish_period='10')),
    # The GST paper's PPO row is on Football; 10 evaluation episodes, as a
    # scenario's return is a goal or none.
    'ppo': dict(envs=['football:academy_empty_goal_close'],
                methods=['dense', 'prune', 'gst_B4_s1.0'],
                max_actor_steps=500_000, max_seconds=3600.0,
                seeds=['0', '1', '2'], early=(150, 1100), eval_every=100,
                train=dict(num_actors=2, publish_period='10',
                           eval_episodes=10)),
}

class Arm(NamedTuple):
  """One run of the comparison: what it is and where its files live."""
  env: str
  method: str
  schedule: str  # '' for dense
  sparsity: str  # '' for dense
  seed: str

  @property
  def path(self) -> str:
    """Relative directory, the same under --out_dir and --results_dir."""
    parts = [self.env.replace(':', '_'), self.method]
    if self.method != 'dense':
      parts.append(f'{self.schedule}_s{self.sparsity}')
    return os.path.join(*parts, f'seed_{self.seed}')


def validate(chosen: Dict) -> None:
  """Raises ValueError for the first bad setting, before anything runs."""
  unknown = [m for m in chosen['methods'] if m not in METHODS]
  if unknown:
    raise ValueError(f'unknown methods {unknown}; choose from '
                     f'{", ".join(METHODS)}')
  bad = [s for s in chosen['schedules'] if s not in SCHEDULES]
  if bad:
    raise ValueError(f'unknown schedules {bad}; choose from '
                     f'{", ".join(SCHEDULES)}')
  for text in chosen['sparsities']:
    try:
      value = float(text)
    except ValueError:
      value = -1.0
    if not 0.0 < value < 1.0:
      raise ValueError(f'--sparsities: {text!r} is not a sparsity in (0, 1)')
  for env in chosen['envs']:
    quarl_envs.validate_environment_name(env)


def arms(chosen: Dict) -> List[Arm]:
  """Seed-major, so a sweep stopped early has whole comparisons."""
  result = []
  for seed in chosen['seeds']:
    for env in chosen['envs']:
      for method in chosen['methods']:
        if method == 'dense':
          result.append(Arm(env, method, '', '', seed))
          continue
        for schedule in chosen['schedules']:
          for sparsity in chosen['sparsities']:
            result.append(Arm(env, method, schedule, sparsity, seed))
  return result


def recorded(results_dir: str) -> List[Arm]:
  """Every run whose summary is in results_dir, seed-major, so the tables
  cover all committed runs whichever subset an invocation ran. A directory
  is a run only where Arm.path would have written it."""
  found = []
  for top, _, files in os.walk(results_dir):
    if run_dir_lib.SUMMARY_JSON not in files:
      continue
    path = os.path.relpath(top, results_dir)
    parts = path.split(os.sep)
    if len(parts) not in (3, 4):
      continue
    with open(os.path.join(top, run_dir_lib.SUMMARY_JSON)) as handle:
      env = json.load(handle).get('env', '')
    schedule, _, sparsity = parts[2].partition('_s') if len(parts) == 4 else (
        '', '', '')
    arm = Arm(env, parts[1], schedule, sparsity, parts[-1][len('seed_'):])
    if arm.path == path and arm.seed.isdigit():
      found.append(arm)
  methods, schedules = list(METHODS), list(SCHEDULES)
  return sorted(found, key=lambda a: (
      int(a.seed), a.env,
      methods.index(a.method) if a.method in methods else len(methods),
      a.method, schedules.index(a.schedule) if a.schedule in schedules else -1,
      float(a.sparsity or 0)))


def _agent_config(chosen: Dict, env: str):
  """The agent config every arm of `chosen` runs on `env`."""
  agent, train = chosen['agent'], chosen['train']
  prefix = f'{agent}.'
  return cli.make_agent_config(
      agent, env, {name[len(prefix):]: value for name, value in
                   train.items() if name.startswith(prefix)},
      train.get('preset', RunConfig.preset))


def budget_learner_steps(chosen: Dict, env: str) -> int:
  """The learner steps the env-step budget makes on `env`."""
  return agents.lookup(chosen['agent'])[0].learner_steps(
      _agent_config(chosen, env), chosen['max_actor_steps'])


def schedule_steps(chosen: Dict, arm: Arm) -> List[int]:
  """[begin, end] learner steps of the arm's schedule."""
  if arm.schedule == 'early':
    return list(chosen['early'])
  total = budget_learner_steps(chosen, arm.env)
  return [round(fraction * total) for fraction in STANDARD_FRACTIONS]


def train_settings(chosen: Dict, arm: Arm) -> Dict:
  """The arm's launch.train settings by flag name (cli.resolve makes its
  RunConfig). PPO anneals its learning rate and clip over the budget."""
  result = dict(agent=chosen['agent'], env=arm.env, actor_precision='int8',
                max_actor_steps=chosen['max_actor_steps'],
                max_seconds=chosen['max_seconds'], seed=int(arm.seed),
                eval_every=chosen['eval_every'], **METHODS[arm.method])
  if hasattr(_agent_config(chosen, arm.env), 'anneal_steps'):
    result[f'{chosen["agent"]}.anneal_steps'] = budget_learner_steps(
        chosen, arm.env)
  if arm.method != 'dense':
    begin, end = schedule_steps(chosen, arm)
    result.update({'compression.s_final': float(arm.sparsity),
                   'compression.begin_step': begin,
                   'compression.end_step': end})
  return {**result, **chosen['train']}


RESULT_FILES = (run_dir_lib.SUMMARY_JSON, run_dir_lib.EVALUATOR_CSV,
                run_dir_lib.COMPRESSION_CSV, run_dir_lib.CONFIG_JSON)

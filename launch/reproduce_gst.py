r"""GST reproduction: dense vs iterative pruning vs GST, per agent.

Same seed and env-step budget for every method; writes results.md,
results.csv and PNG plots (CR over learner steps; return curves). Each
agent's defaults (AGENT_DEFAULTS) are the budget docs/results.md reports:
TD3 on HalfCheetah (about 12 min per run on a 2-core machine), A2C and PPO
on Breakout (the paper's A2C row; PPO stands in for its Football row). One
run per method and seed, resumed if interrupted.

  python -m launch.reproduce_gst --out_dir=runs/gst               # HalfCheetah
  python -m launch.reproduce_gst --out_dir=runs/gst_ant --envs=gym:Ant-v4 \
      --max_actor_steps=100000 --prune_end_step=60000 --seeds=0
  python -m launch.reproduce_gst --full --max_actor_steps=1000000  # + Humanoid
  python -m launch.reproduce_gst --agent=a2c --out_dir=runs/gst_a2c  # Breakout
  python -m launch.reproduce_gst --agent=ppo --out_dir=runs/gst_ppo
"""
import csv
import os
import sys
from typing import Dict, List, Tuple

from absl import flags

from launch import cli
from launch import analysis
from launch import run_dir as run_dir_lib
from launch import sweep
from quarl import envs as quarl_envs

# name -> launch.train compression flags. Pruning groups match the GST arm
# they are compared with: 'prune' (4x4) against B=4, 'prune_B2' against B=2.
METHODS = {
    'dense': ['--compression=none'],
    'prune': ['--compression=prune', '--gst_block_size=4'],
    'prune_B2': ['--compression=prune', '--gst_block_size=2'],
    'gst_B2_s0.25': ['--compression=gst', '--gst_block_size=2',
                     '--gst_s_shift=0.25'],
    'gst_B2_s1.0': ['--compression=gst', '--gst_block_size=2',
                    '--gst_s_shift=1.0'],
    'gst_B4_s0.25': ['--compression=gst', '--gst_block_size=4',
                     '--gst_s_shift=0.25'],
    'gst_B4_s1.0': ['--compression=gst', '--gst_block_size=4',
                    '--gst_s_shift=1.0'],
    # The block-size transforms (docs/architecture.md), from B=4.
    'gst_proj_s0.25': ['--compression=gst', '--gst_block_size=4',
                       '--gst_s_shift=0.25', '--gst_transform=projection'],
    'gst_b4f_b2_s0.25': ['--compression=gst', '--gst_block_size=4',
                         '--gst_s_shift=0.25',
                         '--gst_transform=b4_friendly_b2'],
    'gst_b4f_b4_s0.25': ['--compression=gst', '--gst_block_size=4',
                         '--gst_s_shift=0.25',
                         '--gst_transform=b4_friendly_b4'],
}

# Per agent, the defaults of the flags below that are left unset. On-policy
# learners consume exactly batch x unroll env steps per update (A2C 4 x 16,
# PPO 8 x 16), so their schedules are short in learner steps; their four
# actors make a batch's trajectories come from different games, and a
# publish every 10 learner steps keeps the acting model close behind.
# num_actors and publish_period have no flag here: --train_args, passed
# after them, overrides them (absl keeps a repeated flag's last value).
AGENT_DEFAULTS = {
    'td3': dict(envs=['gym:HalfCheetah-v4'],
                methods=['dense', 'prune', 'gst_B4_s1.0', 'gst_b4f_b2_s0.25'],
                max_actor_steps=150_000, max_seconds=3000.0, seeds=['0', '1'],
                prune_begin_step=5000, prune_end_step=90_000, eval_every=5000,
                num_actors=1, publish_period='5s'),
    'a2c': dict(envs=['ale:Breakout'],
                methods=['dense', 'gst_B2_s1.0', 'prune_B2'],
                max_actor_steps=400_000, max_seconds=3000.0, seeds=['0'],
                prune_begin_step=500, prune_end_step=4500, eval_every=200,
                num_actors=4, publish_period='10'),
    'ppo': dict(envs=['ale:Breakout'],
                methods=['gst_B4_s1.0', 'dense'],
                max_actor_steps=200_000, max_seconds=3000.0, seeds=['0'],
                prune_begin_step=150, prune_end_step=1100, eval_every=50,
                num_actors=4, publish_period='10'),
}

_AGENT = flags.DEFINE_enum('agent', 'td3', list(AGENT_DEFAULTS),
                           'Agent every arm trains.')
_OUT = flags.DEFINE_string('out_dir', 'runs/reproduce_gst', 'Output dir.')
_FULL = flags.DEFINE_bool('full', False, 'Also gym:Humanoid-v4 (TD3).')
_UNSET = ' (default: per --agent, AGENT_DEFAULTS)'
_ENVS = flags.DEFINE_list('envs', None, 'Environments.' + _UNSET)
_METHODS = flags.DEFINE_list(
    'methods', None,
    f'Methods to compare, of: {", ".join(METHODS)}.' + _UNSET)
_MAX_ACTOR_STEPS = flags.DEFINE_integer('max_actor_steps', None,
                                        'Env-step budget per run.' + _UNSET)
_MAX_SECONDS = flags.DEFINE_float('max_seconds', None,
                                  'Wall-clock safety cap per run.' + _UNSET)
_SEEDS = flags.DEFINE_list('seeds', None,
                           'Seeds; every method runs each.' + _UNSET)
_SPARSITY_FINAL = flags.DEFINE_float('sparsity_final', 0.9, 'Final target.')
_BEGIN = flags.DEFINE_integer('prune_begin_step', None,
                              'Schedule start (learner steps).' + _UNSET)
_END = flags.DEFINE_integer('prune_end_step', None,
                            'Schedule end (learner steps).' + _UNSET)
_EVAL_EVERY = flags.DEFINE_integer(
    'eval_every', None, 'Evaluate every N learner steps: the reward-aware '
    'clock then sees returns at the same steps on any machine.' + _UNSET)
_EXTRA = flags.DEFINE_list('train_args', [], 'Extra launch.train flags.')


def settings() -> Dict:
  """The flags as set, unset ones taken from the agent's defaults."""
  chosen = dict(AGENT_DEFAULTS[_AGENT.value])
  for name, holder in (('envs', _ENVS), ('methods', _METHODS),
                       ('max_actor_steps', _MAX_ACTOR_STEPS),
                       ('max_seconds', _MAX_SECONDS), ('seeds', _SEEDS),
                       ('prune_begin_step', _BEGIN),
                       ('prune_end_step', _END), ('eval_every', _EVAL_EVERY)):
    if holder.value is not None:
      chosen[name] = holder.value
  if _FULL.value:
    chosen['envs'] = list(chosen['envs']) + ['gym:Humanoid-v4']
  return chosen


FIELDS = ('agent', 'env', 'method', 'seed', 'average_cr', 'final_cr',
          'final_network_cr', 'final_return', 'best_return', 'last5_return',
          'dense_final_return', 'final_vs_dense', 'best_vs_dense',
          'last5_vs_dense', 'actor_steps', 'learner_steps', 'status')
# Evaluations averaged for the late return: one evaluation (3 episodes) is
# noisy, Breakout's swinging from 0.7 to 10 between neighbours.
LAST_EVALUATIONS = 5


def _run_dir(out_dir, env, method, seed):
  return os.path.join(out_dir, 'runs', env.replace(':', '_'), method,
                      f'seed_{seed}')


def cr_curve(run_dir: str) -> List[Tuple[float, float]]:
  rows = run_dir_lib.read_csv(os.path.join(run_dir,
                                           run_dir_lib.COMPRESSION_CSV))
  return [(float(r['learner_step']), float(r['compressed_cr'])) for r in rows]


def lead_lines(out_dir, env, rows, prune_method, prune_curve,
               seed) -> List[str]:
  """Per GST arm of `seed`: its measured lead over `prune_method` and the
  bound."""
  average = {r['method']: r['average_cr'] for r in rows if r['seed'] == seed}
  lines = []
  for method in average:
    if method.startswith('gst') and prune_method in average:
      plateau = analysis.circulant_plateau(
          _run_dir(out_dir, env, method, seed))
      lead = average[method] - average[prune_method]
      lines.append(
          f'- {env} {method}: {100 * lead:+.1f} points over {prune_method}; '
          f'the schedule allows at most '
          f'{100 * analysis.lead_bound(prune_curve, plateau):+.1f} for its '
          f'circulant plateau of {plateau:.4g}.')
  return lines


def relative(value, dense):
  """value / dense for positive dense returns; None when not meaningful."""
  if value is None or dense is None or dense <= 0:
    return None
  return value / dense


def compare_env(agent, out_dir, env, methods, seeds) -> Tuple[List[Dict], Dict,
                                                      Dict]:
  """Rows per (method, seed) against the dense run of the same seed; curves
  of the first seed."""
  rows, cr_curves, return_curves = [], {}, {}
  for seed in seeds:
    summaries = {m: analysis.load_json_if_exists(
        os.path.join(_run_dir(out_dir, env, m, seed), 'summary.json'))
                 for m in methods}
    dense = summaries.get('dense') or {}
    curves = {m: analysis.load_curve(_run_dir(out_dir, env, m, seed))
              for m, summary in summaries.items() if summary}
    dense_late = (analysis.late_return(curves['dense'], LAST_EVALUATIONS)
                  if 'dense' in curves else None)
    for method, summary in summaries.items():
      if not summary:
        continue
      run_dir = _run_dir(out_dir, env, method, seed)
      if seed == seeds[0]:
        cr_curves[method] = cr_curve(run_dir)
        return_curves[method] = curves[method]
      late = analysis.late_return(curves[method], LAST_EVALUATIONS)
      rows.append(dict(
          agent=agent, env=env, method=method, seed=seed,
          average_cr=summary.get('average_cr'),
          final_cr=summary.get('final_cr'),
          final_network_cr=summary.get('final_network_cr'),
          final_return=summary['final_return'],
          best_return=summary['best_return'], last5_return=late,
          dense_final_return=dense.get('final_return'),
          final_vs_dense=relative(summary['final_return'],
                                  dense.get('final_return')),
          best_vs_dense=relative(summary['best_return'],
                                 dense.get('best_return')),
          last5_vs_dense=relative(late, dense_late),
          actor_steps=summary['actor_steps'],
          learner_steps=summary['learner_steps'], status=summary['status']))
  return rows, cr_curves, return_curves


def write_results(agent, out_dir, envs, methods, seeds) -> List[Dict]:
  plots = os.path.join(out_dir, 'plots')
  os.makedirs(plots, exist_ok=True)
  all_rows, bounds = [], []
  for env in envs:
    rows, cr_curves, return_curves = compare_env(agent, out_dir, env,
                                                 methods, seeds)
    all_rows += rows
    for prune_method in (m for m in methods if m.startswith('prune')):
      if cr_curves.get(prune_method):
        bounds += lead_lines(out_dir, env, rows, prune_method,
                             cr_curves[prune_method], seeds[0])
    name = env.replace(':', '_')
    analysis.plot_series(cr_curves, 'learner step', 'compressed-layer CR',
                         f'{env}: compression ratio',
                         os.path.join(plots, f'cr_{name}.png'))
    analysis.plot_curves(return_curves, f'{env}: evaluation return',
                         os.path.join(plots, f'return_{name}.png'))
  with open(os.path.join(out_dir, 'results.csv'), 'w', newline='') as handle:
    writer = csv.DictWriter(handle, FIELDS)
    writer.writeheader()
    writer.writerows(all_rows)
  table = analysis.markdown_table(
      ('agent', 'env', 'method', 'seed', 'average CR', 'final CR',
       'final CR (network)', 'final return', 'best return',
       'last-5 return', 'final / dense', 'best / dense', 'last-5 / dense',
       'learner steps'),
      [(r['agent'], r['env'], r['method'], r['seed'],
        analysis.fmt(r['average_cr']),
        analysis.fmt(r['final_cr']), analysis.fmt(r['final_network_cr']),
        analysis.fmt(r['final_return'], 4), analysis.fmt(r['best_return'], 4),
        analysis.fmt(r['last5_return'], 4),
        analysis.fmt(r['final_vs_dense']), analysis.fmt(r['best_vs_dense']),
        analysis.fmt(r['last5_vs_dense']), r['learner_steps'])
       for r in all_rows])
  with open(os.path.join(out_dir, 'results.md'), 'w') as handle:
    handle.write(
        '# GST reproduction\n\n'
        'Command: `python -m launch.reproduce_gst '
        f'{" ".join(sys.argv[1:])}`\n\n'
        'CR is over the compressed (hidden->hidden) layers unless marked '
        '"network" (which counts the dense first/last layers and biases). '
        'Average CR is the mean of the per-learner-step CR over the run. '
        f'"Last-5" is the mean of the last {LAST_EVALUATIONS} evaluations. '
        '"/ dense" is the return relative to the dense run with the same '
        'seed and budget (n/a when the dense return is not positive).\n\n'
        f'{table}\n\n'
        f'Lead over iterative pruning in average CR (seed {seeds[0]}). A GST '
        'arm holds its circulant plateau until pruning passes it, then '
        'follows the same schedule, so the schedule bounds the lead:\n'
        + ''.join(f'{line}\n' for line in bounds) + '\nPlots: `plots/`.\n')
  return all_rows


def main(argv):
  del argv
  chosen = settings()
  envs, methods, seeds = chosen['envs'], chosen['methods'], chosen['seeds']
  unknown = [m for m in methods if m not in METHODS]
  try:
    if unknown:
      raise ValueError(f'unknown methods {unknown}; choose from '
                       f'{", ".join(METHODS)}')
    for env in envs:
      quarl_envs.validate_environment_name(env)
  except ValueError as error:
    cli.usage_exit('reproduce_gst', str(error))
  commands, run_dirs = [], []
  for seed in seeds:
    for env in envs:
      for method in methods:
        commands.append([
            f'--agent={_AGENT.value}', f'--env={env}',
            '--actor_precision=int8',
            f'--num_actors={chosen["num_actors"]}',
            f'--publish_period={chosen["publish_period"]}',
            f'--max_actor_steps={chosen["max_actor_steps"]}',
            f'--max_seconds={chosen["max_seconds"]}', f'--seed={seed}',
            f'--sparsity_final={_SPARSITY_FINAL.value}',
            f'--prune_begin_step={chosen["prune_begin_step"]}',
            f'--prune_end_step={chosen["prune_end_step"]}',
            f'--eval_every={chosen["eval_every"]}', *METHODS[method],
            *_EXTRA.value])
        run_dirs.append(_run_dir(_OUT.value, env, method, seed))
  sweep.run_all(commands, run_dirs)
  write_results(_AGENT.value, _OUT.value, envs, methods, seeds)
  with open(os.path.join(_OUT.value, 'results.md')) as handle:
    print(handle.read())


if __name__ == '__main__':
  cli.run_main(main, 'reproduce_gst')

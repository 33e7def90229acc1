r"""Where should the int8 policy model end? Fidelity of three export points.

`spec`: the whole policy, tanh and the affine rescale to the action spec in
the int8 model (what shipped before; LiteRT aborts on it once the policy
saturates). `tanh`: the model ends at tanh's output (int8 tanh has a fixed
output scale), the rescale runs in float on the actor. `pre_tanh`: the model
ends at the action head, tanh and rescale run in float.

For D4PG's policy network on real observations of each task, in five
regimes (as initialised; moderate outputs; bang-bang, saturated on both
sides; saturated at one bound; dead ReLUs), every export point is converted
to full int8 (`int8_all`, every op, as when this question was asked:
actors' models now keep the action head in float, quantization/float_ends.py)
and run on held observations in a ModelProbe child. Errors are
|int8 action - fp32 action| / action range. One run, side by side:

  python -m benchmarks.squash_fidelity [--seeds=3]
"""
import collections
import csv
import os

import numpy as np
import tensorflow as tf
from absl import flags
from acme import specs

from agents.d4pg import networks
from benchmarks import policies
from launch import cli
from quarl.quantization.calibration import rollout_observations
from quarl import envs
from quarl import quantization
from quarl.actors import exploration

_ENVS = flags.DEFINE_list(
    'envs', ['gym:Pendulum-v1', 'dm_control:cartpole:swingup',
             'dm_control:walker:walk'], 'Tasks (observations, action spec).')
_SEEDS = flags.DEFINE_integer('seeds', 3, 'Random policies per regime.')
_LAYER_NORM = flags.DEFINE_bool(
    'policy_layer_norm', False, "Acme's LayerNorm + tanh after the policy "
    "torso's input layer (agents/d4pg/networks.py make_torso).")
_OUT = flags.DEFINE_string('out', 'benchmarks/results/squash_fidelity.csv',
                           'CSV of every conversion.')

EXPORTS = ('spec', 'tanh', 'pre_tanh')
def _export(policy, export: str, action_spec):
  """(model callable, float postprocess to action units)."""
  to_spec = lambda unit: exploration.unit_to_spec(unit, action_spec)  # pylint: disable=unnecessary-lambda-assignment
  if export == 'spec':
    return policy, lambda action: action
  if export == 'tanh':
    return policy.unit_action, to_spec
  return policy.body, lambda pre: to_spec(np.tanh(pre))


def measure(env_name: str, seeds: int, layer_norm: bool):
  environment = envs.make_environment(env_name, 0)
  spec = specs.make_environment_spec(environment)
  observations = rollout_observations(environment, 320,
                                      np.random.default_rng(0))
  calibration, held = observations[:256], observations[256:]
  action_range = spec.actions.maximum - spec.actions.minimum
  rows = []
  for regime in policies.REGIMES:
    for seed in range(seeds):
      tf.random.set_seed(seed)
      policy = networks.make_policy_network(spec.actions, (256, 256, 256),
                                            layer_norm)
      policy(tf.constant(calibration[:1]))
      policies.set_regime(policy, regime, calibration)
      for export in EXPORTS:
        model, postprocess = _export(policy, export, spec.actions)
        row = dict(env=env_name, regime=regime, seed=seed, export=export)
        try:
          converted = quantization.convert_policy(
              model, policy.variables, calibration.shape[1], 'int8_all',
              calibration, held, postprocess=postprocess,
              output_scale=action_range)
          row.update(loaded=1, mean_rel_err=converted.mean_rel_err,
                     p95_rel_err=converted.p95_rel_err,
                     max_rel_err=converted.max_abs_err / float(
                         np.min(action_range)))
        except quantization.UnloadableModelError as error:
          row.update(loaded=0, refused=str(error))
        rows.append(row)
  return rows


def table(rows) -> str:
  """Markdown: per regime and export point, loads and mean/p95 errors."""
  cells = collections.defaultdict(list)
  for row in rows:
    cells[(row['regime'], row['export'])].append(row)
  lines = ['| regime | export | loaded | mean rel err | p95 rel err |'
           ' max rel err |', '|---|---|---|---|---|---|']
  for regime in policies.REGIMES:
    for export in EXPORTS:
      group = cells[(regime, export)]
      ok = [r for r in group if r['loaded']]
      stat = lambda key, ok=ok: (f'{np.mean([r[key] for r in ok]):.4f}'  # pylint: disable=g-long-lambda
                                 if ok else '-')
      lines.append(f'| {regime} | {export} | {len(ok)}/{len(group)} | '
                   f'{stat("mean_rel_err")} | {stat("p95_rel_err")} | '
                   f'{stat("max_rel_err")} |')
  return '\n'.join(lines)


def main(argv):
  del argv
  rows = [row for env_name in _ENVS.value
          for row in measure(env_name, _SEEDS.value, _LAYER_NORM.value)]
  torso = 'LayerNorm' if _LAYER_NORM.value else 'ReLU'
  print(f'int8 export points, D4PG 3x256 {torso} policy, {len(_ENVS.value)} '
        f'tasks x {_SEEDS.value} seeds per regime; errors relative to the '
        'action range on 64 held observations (mean over tasks and seeds)\n')
  print(table(rows))
  for export in EXPORTS:
    ok = [r for r in rows if r['export'] == export and r['loaded']]
    print(f'{export}: loaded {len(ok)}/{len(rows) // len(EXPORTS)}, '
          f'mean rel err {np.mean([r["mean_rel_err"] for r in ok]):.4f}, '
          f'p95 rel err {np.mean([r["p95_rel_err"] for r in ok]):.4f}')
  os.makedirs(os.path.dirname(_OUT.value) or '.', exist_ok=True)
  fields = ['env', 'regime', 'seed', 'export', 'loaded', 'mean_rel_err',
            'p95_rel_err', 'max_rel_err', 'refused']
  with open(_OUT.value, 'w', newline='') as handle:
    writer = csv.DictWriter(handle, fields)
    writer.writeheader()
    writer.writerows(rows)


if __name__ == '__main__':
  cli.run_main(main, 'squash_fidelity')

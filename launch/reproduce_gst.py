r"""GST reproduction: dense vs iterative pruning vs GST, per agent.

Every arm of a comparison runs with the same seeds, env-step budget and
evaluation. Pruning follows the field's standard gradual schedule: Zhu &
Gupta's cubic ramp from 20% to 80% of the run's learner steps (Graesser et
al. 2022, "The State of Sparse Training in Deep RL"); GST's sparse phase
follows the same ramp after its hand-over. `--schedules=early` adds the
agent's earlier, shorter schedule (TD3: learner steps 5,000 to 90,000) and
`--sparsities` the final-sparsity sweep (ultimate compression).

A run's small files (summary.json, evaluator.csv, compression.csv,
config.json) are copied to --results_dir as it ends; runs already there are
not run again, and every table is computed from those files alone and
covers every run recorded there, whichever subset this invocation ran. So a
sweep resumes on another machine from a checkout that holds them
(--commit_results commits each one as it lands).

  python -m launch.reproduce_gst                    # TD3 HalfCheetah-v5
  python -m launch.reproduce_gst --envs=gymnasium:Hopper-v5 --seeds=0
  python -m launch.reproduce_gst --methods=prune,gst_b4f_b2_s0.25 \
      --sparsities=0.8,0.9,0.95,0.98 --seeds=0            # ultimate CR
  python -m launch.reproduce_gst --agent=a2c                # Breakout
  python -m launch.reproduce_gst --background --max_seconds=8000  # beside other work
  python -m launch.reproduce_gst --tables_only   # tables from results_dir
"""
import os
from typing import Dict

from absl import flags

from launch import cli
from launch.analysis import gst_plan
from launch.analysis import gst_report
from launch.runtime import run_dir as run_dir_lib
from launch import settings as launch_settings
from launch.runtime import sweep
from launch.analysis.gst_plan import AGENT_DEFAULTS
from launch.analysis.gst_plan import METHODS
from launch.analysis.gst_plan import SCHEDULES

_AGENT = flags.DEFINE_enum('agent', 'td3', list(AGENT_DEFAULTS),
                           'Agent every arm trains.')
_OUT = flags.DEFINE_string('out_dir', 'runs/reproduce_gst',
                           'Run directories (checkpoints, replay, logs).')
_RESULTS = flags.DEFINE_string(
    'results_dir', None, "Each finished run's small files, the tables and "
    'plots; default: OUT_DIR/results. The repository keeps its own in '
    'docs/results/gst.')
_COMMIT = flags.DEFINE_bool(
    'commit_results', False, "git-commit each finished run's small files "
    'in the repository holding --results_dir, as the run ends.')
_BACKGROUND = flags.DEFINE_bool(
    'background', False, "Run at Linux's idle scheduling class, taking only "
    'CPU nothing else wants, so the sweep can share the machine with timing '
    'measurements and tests (budgets are env steps: only wall time grows, '
    'so raise --max_seconds with it).')
_TABLES_ONLY = flags.DEFINE_bool(
    'tables_only', False, 'Run nothing: write the tables from --results_dir.')
_UNSET = ' (default: per --agent, AGENT_DEFAULTS)'
_ENVS = flags.DEFINE_list('envs', None, 'Environments.' + _UNSET)
_METHODS = flags.DEFINE_list(
    'methods', None,
    f'Methods to compare, of: {", ".join(METHODS)}.' + _UNSET)
_SCHEDULES = flags.DEFINE_list(
    'schedules', ['standard'], f'Pruning schedules, of {SCHEDULES}: standard '
    '(cubic, 20% to 80% of the learner steps) or early (the agent\'s '
    'earlier steps). Dense runs once for all.')
_SPARSITIES = flags.DEFINE_list('sparsities', ['0.9'],
                                'Final target sparsities of every '
                                'compressed arm.')
_MAX_ACTOR_STEPS = flags.DEFINE_integer('max_actor_steps', None,
                                        'Env-step budget per run.' + _UNSET)
_MAX_SECONDS = flags.DEFINE_float('max_seconds', None,
                                  'Wall-clock safety cap per run.' + _UNSET)
_SEEDS = flags.DEFINE_list('seeds', None,
                           'Seeds; every arm runs each.' + _UNSET)
_EVAL_EVERY = flags.DEFINE_integer(
    'eval_every', None, 'Evaluate every N learner steps: the reward-aware '
    'clock then sees returns at the same steps on any machine.' + _UNSET)
_EXTRA = flags.DEFINE_list(
    'train_args', None, 'launch.train flags every run gets, as '
    '--name=value (schedules resolve against the config they give); each '
    'replaces the agent\'s own setting of that name.'
    + _UNSET)


def settings() -> Dict:
  """The flags as set, unset ones taken from the agent's defaults."""
  chosen = dict(AGENT_DEFAULTS[_AGENT.value], agent=_AGENT.value)
  for name, holder in (('envs', _ENVS), ('methods', _METHODS),
                       ('max_actor_steps', _MAX_ACTOR_STEPS),
                       ('max_seconds', _MAX_SECONDS), ('seeds', _SEEDS),
                       ('eval_every', _EVAL_EVERY)):
    if holder.value is not None:
      chosen[name] = holder.value
  # Given launch.train flags join the agent's own settings, replacing any
  # they name.
  chosen['train'] = {**chosen['train'],
                     **launch_settings.parse_train_args(_EXTRA.value or [])}
  chosen.update(schedules=_SCHEDULES.value, sparsities=_SPARSITIES.value,
                results_dir=_RESULTS.value or os.path.join(_OUT.value,
                                                           'results'))
  return chosen


def main(argv):
  del argv
  try:
    chosen = settings()
    gst_plan.validate(chosen)
    planned = gst_plan.arms(chosen)
    pending = [] if _TABLES_ONLY.value else [
        arm for arm in planned if run_dir_lib.finished_status(os.path.join(
            chosen['results_dir'], arm.path)) != 'completed']
    # Every arm resolved (and so checked) before the first one runs.
    configs = [cli.resolve({**gst_plan.train_settings(chosen, arm),
                            'run_dir': os.path.join(_OUT.value, arm.path)})
               for arm in pending]
  except ValueError as error:  # cli.UsageError too.
    cli.usage_exit('reproduce_gst', str(error))
  results_dir = chosen['results_dir']

  def write_tables():
    """Writes the tables and plots of every run in results_dir; their paths."""
    gst_report.write(_AGENT.value, results_dir, gst_plan.recorded(results_dir),
                     chosen['max_actor_steps'])
    return sweep.tables_in(results_dir)

  if not _TABLES_ONLY.value:
    print(f'[reproduce_gst] {len(planned) - len(pending)} of {len(planned)} '
          f'runs already in {results_dir}', flush=True)
    sweep.run_all(
        configs,
        after_each=lambda i: sweep.record(
            configs[i].run_dir, os.path.join(results_dir, pending[i].path),
            gst_plan.RESULT_FILES, _COMMIT.value and f'reproduce_gst: '
            f'{_AGENT.value} {pending[i].path}', refresh=write_tables),
        background=_BACKGROUND.value)
  write_tables()
  with open(os.path.join(results_dir, f'{_AGENT.value}.md')) as handle:
    print(handle.read(), flush=True)


if __name__ == '__main__':
  cli.run_main(main, 'reproduce_gst')

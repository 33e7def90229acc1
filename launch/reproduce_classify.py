r"""GST on a supervised classifier: dense vs iterative pruning vs GST.

Every method trains the same ResNet for the same epochs from each seed
(`python -m launch.classify` once per run, one after another); the sweep
writes results.md, results.csv and plots/*.png into --out_dir and prints
results.md. A run with a completed summary.json is skipped, so a stopped
sweep continues where it stopped.

  python -m launch.reproduce_classify --out_dir=runs/classify_digits
  python -m launch.reproduce_classify --data=cifar10:~/data/cifar-10-batches-py \
      --depth=32 --epochs=160 --seeds=0 --out_dir=runs/classify_cifar10
"""
import csv
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

from absl import flags

from launch.analysis import runs as analysis
from launch import cli
from launch.runtime import run_dir as run_dir_lib
from launch import settings as launch_settings

# name -> launch.classify compression settings; pruning groups match GST's
# B=4.
METHODS = {
    'dense': {'compression.kind': 'none'},
    'prune': {'compression.kind': 'prune', 'compression.block_size': 4},
    'gst_B4_s1.0': {'compression.kind': 'gst', 'compression.block_size': 4,
                    'compression.s_shift': 1.0},
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_OUT = flags.DEFINE_string('out_dir', 'runs/reproduce_classify',
                           'Output directory.')
_DATA = flags.DEFINE_string('data', 'digits', 'launch.classify --data.')
_DEPTH = flags.DEFINE_integer('depth', 32, 'ResNet depth (6n+2).')
_EPOCHS = flags.DEFINE_integer('epochs', 40, 'Epochs per run.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 64, 'Images per step.')
_SEEDS = flags.DEFINE_list('seeds', ['0', '1', '2'],
                           'Seeds; every method runs each.')
_METHODS = flags.DEFINE_list('methods', list(METHODS),
                             f'Methods, of: {", ".join(METHODS)}.')
_EXTRA = flags.DEFINE_list('classify_args', [],
                           'Extra launch.classify flags for every run.')

FIELDS = ('method', 'seed', 'final_test_acc', 'test_acc_vs_dense',
          'best_val_acc', 'average_cr', 'final_cr', 'final_network_cr',
          'steps', 'wall_s', 'status')


def _run_dir(method: str, seed: str) -> str:
  return os.path.join(_OUT.value, 'runs', method, f'seed_{seed}')


def _completed(run_dir: str) -> bool:
  summary = analysis.load_json_if_exists(
      os.path.join(run_dir, run_dir_lib.SUMMARY_JSON))
  return bool(summary) and summary.get('status') == 'completed'


def run_all(methods: List[str], seeds: List[str],
            extra: Dict[str, Any]) -> None:
  """One launch.classify per (seed, method), its output in RUN_DIR.log."""
  start, jobs = time.time(), [(s, m) for s in seeds for m in methods]
  for index, (seed, method) in enumerate(jobs):
    run_dir = _run_dir(method, seed)
    print(f'[sweep] run {index + 1}/{len(jobs)}: {run_dir}  elapsed '
          f'{(time.time() - start) / 60:.1f} min', flush=True)
    if _completed(run_dir):
      print('[sweep]   already done, skipped', flush=True)
      continue
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    command = [sys.executable, '-m', 'launch.classify',
               *launch_settings.to_argv({
                   'data': _DATA.value, 'depth': _DEPTH.value,
                   'epochs': _EPOCHS.value, 'batch_size': _BATCH_SIZE.value,
                   'seed': int(seed), **METHODS[method], **extra,
                   'run_dir': run_dir, 'overwrite': True})]
    with open(run_dir + '.log', 'w') as log:
      code = subprocess.call(command, cwd=ROOT, stdout=log,
                             stderr=subprocess.STDOUT)
    if code:
      print(f'[sweep]   exit code {code}; see {run_dir}.log', flush=True)
  print(f'[sweep] done in {(time.time() - start) / 60:.1f} min', flush=True)


def collect(methods: List[str], seeds: List[str]) -> List[Dict]:
  rows = []
  for seed in seeds:
    dense = analysis.load_json_if_exists(os.path.join(
        _run_dir('dense', seed), run_dir_lib.SUMMARY_JSON)) or {}
    for method in methods:
      summary = analysis.load_json_if_exists(os.path.join(
          _run_dir(method, seed), run_dir_lib.SUMMARY_JSON))
      if not summary:
        continue
      gap = (None if dense.get('final_test_acc') is None else
             summary['final_test_acc'] - dense['final_test_acc'])
      rows.append(dict(
          method=method, seed=seed, test_acc_vs_dense=gap,
          **{k: summary.get(k) for k in FIELDS if k not in (
              'method', 'seed', 'test_acc_vs_dense')}))
  return rows


def _points(value) -> str:
  return 'n/a' if value is None else f'{100 * value:+.1f}'


def _mean_row(method: str, rows: List[Dict]):
  mine = [r for r in rows if r['method'] == method]
  if not mine:
    return None
  accs = [r['final_test_acc'] for r in mine]
  gaps = [r['test_acc_vs_dense'] for r in mine
          if r['test_acc_vs_dense'] is not None]
  return (method, len(mine),
          f'{statistics.mean(accs):.4f} ({min(accs):.4f}-{max(accs):.4f})',
          _points(statistics.mean(gaps)) if gaps else 'n/a',
          f'{statistics.mean(r["average_cr"] for r in mine):.4f}',
          f'{statistics.mean(r["final_cr"] for r in mine):.4f}',
          f'{statistics.mean(r["final_network_cr"] for r in mine):.4f}')


def write_results(methods: List[str], seeds: List[str]) -> str:
  rows = collect(methods, seeds)
  with open(os.path.join(_OUT.value, 'results.csv'), 'w',
            newline='') as handle:
    writer = csv.DictWriter(handle, FIELDS)
    writer.writeheader()
    writer.writerows(rows)
  per_run = analysis.markdown_table(
      ('method', 'seed', 'test acc', 'vs dense (points)', 'best val acc',
       'average CR', 'final CR', 'final CR (network)', 'steps', 'wall s'),
      [(r['method'], r['seed'], f'{r["final_test_acc"]:.4f}',
        _points(r['test_acc_vs_dense']), f'{r["best_val_acc"]:.4f}',
        f'{r["average_cr"]:.4f}', f'{r["final_cr"]:.4f}',
        f'{r["final_network_cr"]:.4f}', r['steps'], f'{r["wall_s"]:.0f}')
       for r in rows])
  means = analysis.markdown_table(
      ('method', 'seeds', 'test acc, mean (min-max)', 'vs dense (points)',
       'average CR', 'final CR', 'final CR (network)'),
      [row for row in (_mean_row(m, rows) for m in methods) if row])
  _plots(methods, seeds[0])
  text = (
      f'# GST on a supervised classifier ({_DATA.value}, ResNet-'
      f'{_DEPTH.value}, {_EPOCHS.value} epochs)\n\n'
      f'Command: `python -m launch.reproduce_classify '
      f'{" ".join(sys.argv[1:])}`\n\n'
      'Test accuracy at the last epoch; "vs dense" against the dense run of '
      'the same seed. CR is over the compressible convs (every conv inside '
      'the residual blocks); "network" also counts the dense first conv, '
      'classifier and batch norms as stored. Average CR is the mean of the '
      'per-step CR over all optimizer steps.\n\n'
      f'{means}\n\n{per_run}\n\nPlots (seed {seeds[0]}): `plots/`.\n')
  with open(os.path.join(_OUT.value, 'results.md'), 'w') as handle:
    handle.write(text)
  return text


def _plots(methods: List[str], seed: str) -> None:
  plots = os.path.join(_OUT.value, 'plots')
  os.makedirs(plots, exist_ok=True)
  cr, accuracy = {}, {}
  for method in methods:
    run_dir = _run_dir(method, seed)
    cr[method] = [(float(r['learner_step']), float(r['compressed_cr']))
                  for r in run_dir_lib.read_csv(os.path.join(
                      run_dir, run_dir_lib.COMPRESSION_CSV))]
    accuracy[method] = [(float(r['epoch']), float(r['test_acc']))
                        for r in run_dir_lib.read_csv(os.path.join(
                            run_dir, run_dir_lib.METRICS_CSV))]
  analysis.plot_series(cr, 'optimizer step', 'compressed-layer CR',
                       f'{_DATA.value}: compression ratio (seed {seed})',
                       os.path.join(plots, 'cr.png'))
  analysis.plot_series(accuracy, 'epoch', 'test accuracy',
                       f'{_DATA.value}: test accuracy (seed {seed})',
                       os.path.join(plots, 'accuracy.png'))


def main(argv):
  del argv
  unknown = [m for m in _METHODS.value if m not in METHODS]
  if unknown:
    cli.usage_exit('reproduce_classify', f'unknown methods {unknown}; choose '
                   f'from {", ".join(METHODS)}')
  if not _SEEDS.value:
    cli.usage_exit('reproduce_classify', '--seeds is empty')
  try:
    extra = launch_settings.from_argv(_EXTRA.value)
  except ValueError as error:
    cli.usage_exit('reproduce_classify', f'--classify_args: {error}')
  os.makedirs(_OUT.value, exist_ok=True)
  run_all(_METHODS.value, _SEEDS.value, extra)
  print(write_results(_METHODS.value, _SEEDS.value))


if __name__ == '__main__':
  cli.run_main(main, 'reproduce_classify')

"""Runs one configured program to its budget and writes its summary.

Shared by launch/train.py, the reproduce scripts and the notebooks, so each
gets the same run-directory contract and the same end-of-run behaviour.
"""
import dataclasses
import json
import os
import sys
import threading
import time
from typing import Any, Dict, Tuple

import launchpad as lp
from absl import flags

from launch import baselines
from launch import network
from launch import progress
from launch import run_dir as run_dir_lib
from launch import summary as summary_lib
from launch.config import RunConfig
from launch.nodes import common
from launch.program import build_program
from quarl import carbon

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
TERMINATION_NOTICE_S = 30

# Quiet children: TF C++ info/warnings from every node drown the progress.
_NODE_ENVIRONMENT = {'TF_CPP_MIN_LOG_LEVEL': '2', 'MUJOCO_GL': 'disable',
                     'PYTHONWARNINGS': 'ignore'}


def _versions() -> Dict[str, str]:
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  names = ('tensorflow-cpu', 'dm-acme', 'dm-launchpad', 'dm-reverb',
           'ai-edge-litert', 'codecarbon', 'dm-control', 'gym', 'mujoco')
  versions = {'python': sys.version.split()[0]}
  for name in names:
    try:
      versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      versions[name] = 'missing'
  return versions


def write_config(config: RunConfig) -> None:
  payload = {'run': dataclasses.asdict(config), 'versions': _versions(),
             'argv': sys.argv}
  run_dir_lib.write_json_atomic(
      os.path.join(config.run_dir, run_dir_lib.CONFIG_JSON), payload)


def _create_csv_headers(run_dir: str) -> None:
  """Headers written once, here, so node processes only ever append."""
  for name, fields in ((run_dir_lib.EVALUATOR_CSV, run_dir_lib.EVALUATOR_FIELDS),
                       (run_dir_lib.ACTORS_CSV, run_dir_lib.ACTORS_FIELDS),
                       (run_dir_lib.QUANTIZER_CSV,
                        run_dir_lib.QUANTIZER_FIELDS)):
    run_dir_lib.CsvAppender(os.path.join(run_dir, name), fields)


def _budget_reached(config: RunConfig) -> bool:
  rows = run_dir_lib.read_csv(
      os.path.join(config.run_dir, run_dir_lib.EVALUATOR_CSV))
  if not rows:
    return False
  last = rows[-1]
  return (float(last['wall_time_s']) >= config.max_seconds or bool(
      config.max_actor_steps and
      float(last['actor_steps']) >= config.max_actor_steps))


def _launch_and_wait(config: RunConfig) -> Tuple[str, str]:
  """Returns (status, detail) once every node has exited."""
  os.environ.update(_NODE_ENVIRONMENT)
  # Node temp files (TFLite conversion scratch SavedModels) stay in run_dir.
  node_tmp = os.path.join(config.run_dir, 'tmp')
  os.makedirs(node_tmp, exist_ok=True)
  os.environ['TMPDIR'] = node_tmp
  program = build_program(config)
  # Seconds Launchpad lets nodes finish before killing the whole runtime
  # (the launcher too): generous, since a loaded 2-core host is slow.
  flags.FLAGS.lp_termination_notice_secs = TERMINATION_NOTICE_S
  if config.launch_type == 'local_mt':
    manager = lp.launch(program, launch_type='local_mt',
                        serialize_py_nodes=False)
  else:
    _send_node_output_to(os.path.join(config.run_dir, 'logs', 'nodes'))
    manager = lp.launch(program, launch_type='local_mp',
                        terminal='output_to_files')
  threading.Thread(target=_announce_stop, args=(manager, config),
                   daemon=True).start()
  try:
    manager.wait()
  except RuntimeError as error:  # A node process exited non-zero.
    manager.stop_and_wait()
    return 'failed', str(error).splitlines()[0][:300]
  failed_nodes = _failed_nodes(config)
  if failed_nodes:
    return 'failed', (f'node(s) {", ".join(failed_nodes)} raised; see '
                      f'{common.NODE_ERRORS_LOG}')
  return ('completed', '') if _budget_reached(config) else ('interrupted', '')


def _energy_figures(config: RunConfig, tracker) -> Dict[str, Any]:
  """Host energy/CO2 plus per-node CPU seconds and the energy they imply."""
  figures = tracker.summary()
  cpu_seconds = carbon.read_node_cpu_seconds(config.run_dir)
  figures['node_cpu_seconds'] = cpu_seconds
  figures['energy_kwh_by_node_type'] = carbon.split_energy_by_node_type(
      cpu_seconds, figures['energy_kwh'])
  return figures


def _remove_if_empty(directory: str) -> None:
  try:
    os.rmdir(directory)
  except OSError:
    pass  # Missing, or something a node left behind worth keeping.


def _announce_stop(manager, config: RunConfig) -> None:
  """Writes run_dir/STOP once Launchpad starts stopping the program (budget
  reached via lp.stop(), Ctrl-C, or a failed node), for node watchdogs."""
  manager.stop_event().wait()
  with open(os.path.join(config.run_dir, common.STOP_FILE), 'w') as handle:
    handle.write(f'{time.time()}\n')


def _send_node_output_to(directory: str) -> None:
  """Each node's stdout/stderr goes to run_dir/logs/nodes/<node> so the
  terminal shows only progress. Launchpad reads LAUNCHPAD_LOGGING_DIR once
  at import, so the module's setting is updated here instead."""
  from launchpad.launch.run_locally import launch_local_output_to_files  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  launch_local_output_to_files._LOGGING_DIR = directory  # pylint: disable=protected-access


def _failed_nodes(config: RunConfig):
  path = os.path.join(config.run_dir, common.NODE_ERRORS_LOG)
  if not os.path.exists(path):
    return []
  with open(path) as handle:
    return sorted({line.split()[1] for line in handle
                   if line.startswith('=== ')})


def run(config: RunConfig, show_progress: bool = True,
        measure_baselines: bool = True) -> Tuple[Dict[str, Any], int]:
  """Launches, waits, summarizes. run_dir must already be prepared."""
  write_config(config)
  _create_csv_headers(config.run_dir)
  stop_file = os.path.join(config.run_dir, common.STOP_FILE)
  if os.path.exists(stop_file):  # Left by the run being resumed.
    os.remove(stop_file)
  reporter = progress.ProgressReporter(config) if show_progress else None
  if reporter:
    threading.Thread(target=reporter.loop, daemon=True).start()
  tracker = carbon.CarbonTracker(config.run_dir, config.country_iso_code)
  launcher_cpu = carbon.NodeCpuRecorder(config.run_dir, 'launcher')
  start = time.time()
  tracker.start()  # One tracker per host, around every node's lifetime.
  try:
    status, detail = _launch_and_wait(config)
  finally:
    tracker.stop()
    launcher_cpu.close()
  if reporter:
    reporter.stop()
  _remove_if_empty(os.path.join(config.run_dir, 'tmp'))
  extra = {'status_detail': detail} if detail else {}
  extra['network'] = network.current()
  if measure_baselines and status != 'interrupted':
    extra['baseline_returns'] = baselines.baseline_returns(
        config.env, seed=config.seed)
  extra.update(_energy_figures(config, tracker))
  summary = summary_lib.build_summary(config, time.time() - start, status,
                                      extra)
  run_dir_lib.write_json_atomic(
      os.path.join(config.run_dir, run_dir_lib.SUMMARY_JSON), summary)
  code = {'completed': EXIT_OK, 'failed': EXIT_FAILED}.get(status,
                                                           EXIT_INTERRUPTED)
  return summary, code


def format_summary(summary: Dict[str, Any]) -> str:
  """The end-of-run table: return vs baselines, throughput, model, time."""
  baseline = summary.get('baseline_returns') or {}
  rows = [
      ('status', summary['status']),
      ('agent / env', f"{summary['agent']} / {summary['env']}"),
      ('actor precision', summary['actor_precision']),
      ('final return', _fmt(summary['final_return'])),
      ('best return', _fmt(summary['best_return'])),
      ('random-policy return', _fmt(baseline.get('random'))),
      ('zero-action return', _fmt(baseline.get('zero_action'))),
      ('actor env steps/s (all actors)', _fmt(summary['actor_steps_per_s'])),
      ('mean actor inference (us)', _fmt(summary['mean_inference_us'])),
      ('actor / learner steps',
       f"{summary['actor_steps']} / {summary['learner_steps']}"),
      ('publishes', summary['publishes']),
      ('model bytes', summary['model_bytes']),
      ('wall time (s)', summary['wall_s']),
  ]
  if summary.get('compression', 'none') != 'none':
    rows += [('compression', summary['compression']),
             ('average CR (compressed layers)', _fmt(summary['average_cr'])),
             ('final CR (compressed layers)', _fmt(summary['final_cr'])),
             ('final CR (whole network)', _fmt(summary['final_network_cr']))]
  for key in ('energy_kwh', 'co2_kg'):
    if key in summary:
      rows.append((key, _fmt(summary[key])))
  width = max(len(name) for name, _ in rows)
  return '\n'.join(f'{name:<{width}}  {value}' for name, value in rows)


def _fmt(value) -> str:
  if value is None:
    return 'n/a'
  return f'{value:.4g}' if isinstance(value, float) else str(value)


def dump(summary: Dict[str, Any]) -> str:
  return json.dumps(summary, indent=2, sort_keys=True, default=str)

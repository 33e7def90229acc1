"""Runs one configured program to its budget and writes its summary.

Shared by launch/train.py, the reproduce scripts and the notebooks, so each
gets the same run-directory contract and the same end-of-run behaviour.
"""
import dataclasses
import functools
import glob
import json
import os
import signal
import sys
import threading
import time
from typing import Any, Dict, Tuple

import launchpad as lp
from absl import flags

from launch.runtime import baselines
from launch.runtime import network
from launch.runtime import placement
from launch.runtime import progress
from launch.runtime import ray_cluster
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import saved_state
from launch.runtime import stop
from launch.runtime import summary as summary_lib
from launch.runtime import supervisor
from launch.config import RunConfig
from launch.nodes import threads
from launch.program import build_program
from quarl import carbon

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
TERMINATION_NOTICE_S = 30
BUDGET_BACKSTOP_S = 120.0

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
  """Rewritten by every launch: a resume's identity was checked equal to
  the file's (launch/runtime/resume.py), so only what may change changes."""
  payload = {'run': dataclasses.asdict(config), 'versions': _versions(),
             'argv': sys.argv}
  run_dir_lib.write_json_atomic(
      os.path.join(config.run_dir, run_dir_lib.CONFIG_JSON), payload)


def _create_csv_headers(run_dir: str) -> None:
  """Headers written once, here, so node processes only ever append."""
  for name, fields in ((run_dir_lib.EVALUATOR_CSV, run_dir_lib.EVALUATOR_FIELDS),
                       (run_dir_lib.ACTORS_CSV, run_dir_lib.ACTORS_FIELDS),
                       (run_dir_lib.QUANTIZER_CSV,
                        run_dir_lib.QUANTIZER_FIELDS),
                       (run_dir_lib.STARTUP_CSV, run_dir_lib.STARTUP_FIELDS)):
    run_dir_lib.CsvAppender(os.path.join(run_dir, name), fields)


def _budget_reached(config: RunConfig) -> bool:
  if stop.reason(config.run_dir) == stop.BUDGET_SPENT:
    return True  # The evaluator's or the launcher's budget stop.
  rows = run_dir_lib.read_csv(
      os.path.join(config.run_dir, run_dir_lib.EVALUATOR_CSV))
  if not rows:
    return False
  last = rows[-1]
  return (float(last['wall_time_s']) >= config.max_seconds or bool(
      config.max_actor_steps and
      float(last['actor_steps']) >= config.max_actor_steps))


def _launch_and_wait(config: RunConfig) -> supervisor.Outcome:
  """Runs the program until it stops (launch/runtime/stop.py): on its own process
  supervisor, or as threads of this process under local_mt."""
  os.environ.update(_NODE_ENVIRONMENT)
  # Node temp files (TFLite conversion scratch SavedModels) stay in run_dir.
  node_tmp = os.path.join(config.run_dir, run_dir_lib.TMP_DIR)
  os.makedirs(node_tmp, exist_ok=True)
  os.environ['TMPDIR'] = node_tmp
  program = build_program(config)
  errors_log = os.path.join(config.run_dir, run_dir_lib.NODE_ERRORS_LOG)
  if config.launch_type == 'local_mt':
    return _launch_threads(program, config)
  node_env = dict(_NODE_ENVIRONMENT, TMPDIR=node_tmp)
  try:
    if config.launch_type == 'ray':
      where = ray_cluster.RayPlacement(
          config.ray_address, list(program.groups), config.node_start,
          node_env, config.run_dir)
    else:
      where = placement.LocalPlacement(
          config.node_start, node_env,
          os.path.join(config.run_dir, run_dir_lib.NODE_LOGS_DIR))
    supervised = supervisor.Supervisor(
        program, where, config.run_dir, node_env, config.max_restarts,
        errors_log, deadline=budget_deadline(config),
        beacons=functools.partial(_beacons, config.run_dir),
        stall_timeout_s=config.stall_timeout_s)
  except (ray_cluster.ClusterError, placement.HostLost) as error:
    return supervisor.Outcome(f'failed: {error}', {}, {})  # Nothing started.
  return supervised.run()


def _beacons(run_dir: str, name: str, group: str):
  """What shows a node alive: its CPU record, re-stamped every few seconds
  by a thread of its own (silent when the process is stopped or frozen;
  counted once it has begun); for the quantizer also its heartbeat, stamped
  at each publish and each second it waits for one (silent when conversion
  or the learner hangs; counted from its start)."""
  cpu_record = os.path.join(run_dir, carbon.NODE_CPU_DIR, f'{name}.json')
  beacons = [(cpu_record, False)]
  if group == 'quantizer':
    beacons.append((os.path.join(run_dir, run_dir_lib.HEARTBEAT_FILE), True))
  return beacons


def _launch_threads(program, config: RunConfig) -> supervisor.Outcome:
  """local_mt: Launchpad's threads, stopped in the same two waves as
  processes: on a stop request the worker threads end first (the learner
  saving into replay and counter), then the services, then Launchpad's own
  stop ends the servers. Ctrl-C is Launchpad's (its stop event)."""
  flags.FLAGS.lp_termination_notice_secs = TERMINATION_NOTICE_S
  stop.reset_in_process()
  threads.apply_in_process()
  manager = lp.launch(program, launch_type='local_mt',
                      serialize_py_nodes=False)
  deadline = budget_deadline(config)

  def relay_stop():
    while not manager.stop_event().wait(supervisor.POLL_S):
      if time.monotonic() > deadline:
        stop.request(config.run_dir, stop.BACKSTOP)
      if stop.reason(config.run_dir) is not None:
        stop.stop_workers_in_process()
        wave_end = time.monotonic() + supervisor.WAVE_TIMEOUT_S
        while stop.running_workers() and time.monotonic() < wave_end:
          time.sleep(supervisor.POLL_S)
        stop.request_services(config.run_dir)
        manager.stop_event().wait(stop.GRACE_S)  # The services' own stop.
        os.kill(os.getpid(), signal.SIGTERM)  # Launchpad's stop, in-process.
        return
    stop.request(config.run_dir, 'interrupted')

  threading.Thread(target=relay_stop, daemon=True).start()
  try:
    manager.wait()
  except RuntimeError as error:
    stop.request(config.run_dir,
                 f'failed: {str(error).splitlines()[0][:300]}')
  return supervisor.Outcome(stop.reason(config.run_dir) or 'interrupted',
                           {}, {})


def budget_deadline(config: RunConfig) -> float:
  """When (time.monotonic()) the launcher ends the run itself if the
  evaluator has not: the budget left plus room for the final evaluation. On
  this process's monotonic clock: a wall-clock step mid-run moves nothing."""
  left = config.start_time + config.max_seconds - time.time()
  return time.monotonic() + left + BUDGET_BACKSTOP_S + (
      0.1 * config.max_seconds)


def _energy_figures(config: RunConfig, tracker) -> Dict[str, Any]:
  """Host energy/CO2 over every segment of the run (a resume adds one),
  plus per-node CPU seconds and the energy they imply."""
  figures = tracker.run_summary()
  cpu_seconds = carbon.read_node_cpu_seconds(config.run_dir)
  figures['node_cpu_seconds'] = cpu_seconds
  figures['energy_kwh_by_node_type'] = carbon.split_energy_by_node_type(
      cpu_seconds, figures['energy_kwh'])
  return figures


def _sync_csvs(run_dir: str) -> None:
  """A segment's appended rows on disk before its summary says they are."""
  for name in (run_dir_lib.EVALUATOR_CSV, run_dir_lib.ACTORS_CSV,
               run_dir_lib.QUANTIZER_CSV, run_dir_lib.STARTUP_CSV,
               run_dir_lib.COMPRESSION_CSV):
    try:
      run_dir_lib.fsync_file(os.path.join(run_dir, name))
    except OSError as error:  # A full disk: the summary still follows.
      print(f'[launcher] {error}', file=sys.stderr, flush=True)


def _remove_if_empty(directory: str) -> None:
  try:
    os.rmdir(directory)
  except OSError:
    pass  # Missing, or something a node left behind worth keeping.


def elapsed_s(run_dir: str) -> float:
  """Wall seconds the run has spent: the latest of its summary's and of the
  last row of each CSV its nodes append to (set-aside ones included). A
  segment killed before its summary leaves only rows, and the clock must
  not go back past them (the budget they spent would be spent again)."""
  spent = [0.0]
  path = os.path.join(run_dir, run_dir_lib.SUMMARY_JSON)
  if os.path.exists(path):
    with open(path) as handle:
      spent.append(float(json.load(handle)['wall_s']))
  names = (run_dir_lib.EVALUATOR_CSV, run_dir_lib.ACTORS_CSV,
           run_dir_lib.QUANTIZER_CSV, run_dir_lib.STARTUP_CSV)
  # Rows a resume set aside (saved_state.set_aside_lost_rows) spent time too.
  paths = [os.path.join(run_dir, name) for name in names] + [
      path for name in names for path in glob.glob(
          os.path.join(run_dir, run_dir_lib.SET_ASIDE_DIR, '*', name))]
  for path in paths:
    for row in reversed(run_dir_lib.read_csv(path)):
      try:
        spent.append(float(row['wall_time_s']))
        break
      except (TypeError, ValueError):  # A row cut short by the kill.
        continue
  return max(spent)


def with_measurements(config: RunConfig,
                      reference: Dict[str, float]) -> RunConfig:
  """What the resolved settings leave to the launcher: GST's pause band
  measured from the random policy's return (unless given, or kept by a
  resume), and the run's clock, set here only (a resume's counts the whole
  run)."""
  compression = config.compression
  if compression.kind == 'gst' and compression.reward_reference is None:
    compression = dataclasses.replace(compression,
                                      reward_reference=reference['random'])
  return dataclasses.replace(
      config, compression=compression, start_time=time.time() - (
          elapsed_s(config.run_dir) if config.resume else 0.0))


def run(config: RunConfig, show_progress: bool = True
        ) -> Tuple[Dict[str, Any], int]:
  """Launches, waits, summarizes. run_dir must already be prepared."""
  # Before the run's clock: not part of its budget.
  reference = baselines.for_run(config.run_dir, config.env, config.seed)
  config = with_measurements(config, reference)
  if config.resume_point:  # Chosen by resume.check; applied under the lock.
    saved_state.apply(config.run_dir, config.resume_point)
  write_config(config)
  _create_csv_headers(config.run_dir)
  stop.clear(config.run_dir)  # Left by the run being resumed.
  reporter = progress.ProgressReporter(config) if show_progress else None
  if reporter:
    threading.Thread(target=reporter.loop, daemon=True).start()
  tracker = carbon.CarbonTracker(config.run_dir, config.country_iso_code)
  launcher_cpu = carbon.NodeCpuRecorder(config.run_dir, 'launcher')
  start, started = time.time(), time.monotonic()
  tracker.start()  # One tracker per host, around every node's lifetime.
  try:
    outcome = _launch_and_wait(config)
  finally:
    for close in (tracker.stop, launcher_cpu.close):
      try:
        close()
      except OSError as error:  # A full disk: the summary still follows.
        print(f'[launcher] {error}', file=sys.stderr, flush=True)
  if reporter:
    reporter.stop()
  _remove_if_empty(os.path.join(config.run_dir, run_dir_lib.TMP_DIR))
  _sync_csvs(config.run_dir)
  summary = summary_lib.run_summary(
      config, outcome, _budget_reached(config), reference,
      _energy_figures(config, tracker),
      network='ray' if config.launch_type == 'ray' else network.current(),
      segment_wall_s=time.monotonic() - started, segment_start=start)
  try:
    run_dir_lib.write_json_atomic(
        os.path.join(config.run_dir, run_dir_lib.SUMMARY_JSON), summary)
  except OSError as error:  # A full disk: the table below still says it all.
    summary.update(status='failed', status_detail=(
        f'{summary.get("status_detail", "")} (summary.json not written: '
        f'{error})').strip())
  code = {'completed': EXIT_OK, 'failed': EXIT_FAILED}.get(
      summary['status'], EXIT_INTERRUPTED)
  return summary, code


def format_summary(summary: Dict[str, Any]) -> str:
  """The end-of-run table: return vs baselines, throughput, model, time."""
  baseline = summary.get('baseline_returns') or {}
  rows = [
      ('status', summary['status']),
      *([('why', summary['status_detail'])] if summary.get('status_detail')
        else []),
      ('agent / env', f"{summary['agent']} / {summary['env']}"),
      ('actor precision', summary['actor_precision']),
      ('final return', _fmt(summary['final_return'])),
      ('best return', _fmt(summary['best_return'])),
      (f'mean of the last {summary_lib.LAST_EVALUATIONS} evaluations',
       _fmt(summary['last5_return'])),
      ('random-policy return', _fmt(baseline.get('random'))),
      ('zero-action return', _fmt(baseline.get('zero_action'))),
      ('actor env steps/s (all actors)', _fmt(summary['actor_steps_per_s'])),
      ('mean actor inference (us)', _fmt(summary['mean_inference_us'])),
      ('actor / learner steps',
       f"{summary['actor_steps']} / {summary['learner_steps']}"),
      ('first actor / learner step (s)',
       f"{_fmt(summary.get('time_to_first_actor_step_s'))} / "
       f"{_fmt(summary.get('time_to_first_learner_step_s'))}"),
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

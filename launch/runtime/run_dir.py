"""The run-directory contract: everything a run produces lives under run_dir.

CSV rows are appended with one os.write() on an O_APPEND descriptor, so
several node processes can share a file without interleaving lines, and a
killed run leaves every completed row on disk.
"""
import csv
import fcntl
import io
import json
import os
import socket
import tempfile
from typing import Any, Dict, Mapping, Optional, Sequence

# Every file and directory a run writes, relative to its run_dir, named
# here and nowhere else.
CONFIG_JSON = 'config.json'
SUMMARY_JSON = 'summary.json'
EVALUATOR_CSV = 'evaluator.csv'
ACTORS_CSV = 'actors.csv'
QUANTIZER_CSV = 'quantizer.csv'
COMPRESSION_CSV = 'compression.csv'
# When each node process started its main loop and took its first step: where
# a run's start-up time goes (launch/runtime/summary.py first_step_s).
STARTUP_CSV = 'startup.csv'
BASELINES_JSON = 'baselines.json'  # The random policy's measured return.
METRICS_CSV = 'metrics.csv'  # launch.classify's rows, one per epoch.
CURVES_PNG = 'curves.png'  # launch.classify's plot of them.
NODE_ERRORS_LOG = 'node_errors.log'
TENSORBOARD_DIR = 'tensorboard'
NODE_LOGS_DIR = os.path.join('logs', 'nodes')
TMP_DIR = 'tmp'  # Every node's TMPDIR.
# The newest model LiteRT could not load, kept for a post-mortem.
REFUSED_MODEL = 'refused_model.tflite'
# The first wave of a stop (its reason inside), then the second: written by
# the launcher once every other node is gone.
STOP_FILE = 'STOP'
SERVICES_STOP_FILE = 'STOP.services'
LEASE_FILE = 'LEASE'  # Renewed by the launcher while it lives.
CHECKPOINTS_DIR = 'checkpoints'
LEARNER_DIR = os.path.join(CHECKPOINTS_DIR, 'learner')
LEARNER_INDEX = os.path.join(LEARNER_DIR, 'checkpoint')
COUNTS_JSON = os.path.join(CHECKPOINTS_DIR, 'counts.json')
# learner checkpoint name -> {counts, replay, replay_saved, wall_time_s}:
# what the learner saved together, so a fallback finds matching counts.
SAVES_JSON = os.path.join(CHECKPOINTS_DIR, 'saves.json')
EPOCH_FILE = os.path.join(CHECKPOINTS_DIR, 'quantizer_epoch')
# The time of the quantizer's last sign of progress.
HEARTBEAT_FILE = os.path.join(CHECKPOINTS_DIR, 'quantizer_alive')
REPLAY_DIR = 'replay_checkpoints'
SET_ASIDE_DIR = 'damaged'  # Damaged state a resume moved aside.
SET_ASIDE_WHY = 'why.json'  # In each set-aside folder: what and why.

EVALUATOR_FIELDS = ('wall_time_s', 'actor_steps', 'learner_steps',
                    'episode_return', 'policy_version', 'fp32_return')
ACTORS_FIELDS = ('wall_time_s', 'actor_id', 'exploration', 'steps',
                 'steps_per_s', 'mean_inference_us', 'policy_version',
                 'load_failures', 'env_s', 'inference_s', 'adder_s',
                 'refresh_s')
# cpu_s: the node process's CPU seconds at the event.
STARTUP_FIELDS = ('wall_time_s', 'node', 'event', 'cpu_s')
QUANTIZER_FIELDS = ('wall_time_s', 'version', 'learner_steps', 'precision',
                    'status', 'convert_s', 'model_bytes', 'max_abs_err',
                    'mean_rel_err', 'p95_rel_err', 'argmax_mismatch',
                    'calibration_source', 'route')


class RunDirError(ValueError):
  """The run directory cannot be used as asked."""


# Written into every directory prepare_run_dir hands to a run: --overwrite
# empties only directories that carry it (or a run's files from before it).
MARKER = '.quarl_run'
# Held (flock) by the launcher for its lifetime; says `host pid`.
LOCK_FILE = 'LOCK'
# What an emptied or never-started run directory still holds.
_BOOKKEEPING = (MARKER, LOCK_FILE)
# run_dir -> descriptor of its held LOCK, open until this process ends.
_HELD_LOCKS: Dict[str, int] = {}


def prepare_run_dir(path: str, overwrite: bool, resume: bool = False) -> str:
  """Creates run_dir, locked for this process, refusing to clobber anything.

  Every refusal comes before anything is written or deleted: a directory a
  live launcher holds; a non-empty one without --overwrite or --resume; and
  an --overwrite of a directory no run made. A run made it when it holds
  MARKER or, from before the marker, config.json with summary.json or
  evaluator.csv. /, the home and current directories and their parents are
  never emptied.
  """
  path = os.path.abspath(os.path.expanduser(path))
  if overwrite and resume:
    raise RunDirError('--overwrite and --resume exclude each other: '
                      '--overwrite empties the run that --resume continues')
  if os.path.exists(path) and not os.path.isdir(path):
    raise RunDirError(f'--run_dir {path} exists and is not a directory')
  _refuse_if_locked(path)  # In use says more than any rule below.
  names = contents(path)
  if names and not (overwrite or resume):
    raise RunDirError(f'--run_dir {path} is not empty; pass --overwrite to '
                      'replace it or --resume to continue it')
  if overwrite and names:
    _check_ours(path, names)
  try:
    os.makedirs(path, exist_ok=True)
    lock(path)
    if overwrite:
      _clear_dir(path)
    with open(os.path.join(path, MARKER), 'w') as handle:
      handle.write('made by launch.train; --overwrite may empty it\n')
  except OSError as error:
    raise RunDirError(f'--run_dir {path} is not writable: {error}') from error
  return path


def contents(path: str) -> Sequence[str]:
  """What is in `path` besides our bookkeeping ([] if it does not exist)."""
  if not os.path.isdir(path):
    return []
  return [name for name in os.listdir(path) if name not in _BOOKKEEPING]


def lock(path: str) -> None:
  """Holds path/LOCK until this process ends, so a second launcher on the
  same run fails instead of clearing its STOP file or its results; flock
  dies with its holder, so a crashed run leaves no stale lock."""
  if path in _HELD_LOCKS:
    return
  fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    error = _in_use(path, fd)
    os.close(fd)
    raise error from None
  os.ftruncate(fd, 0)
  os.write(fd, f'{socket.gethostname()} {os.getpid()}\n'.encode())
  _HELD_LOCKS[path] = fd


def refuse_if_locked(path: str) -> None:
  """lock()'s refusal, without writing anything (path may be no run's)."""
  _refuse_if_locked(os.path.abspath(os.path.expanduser(path)))


def _refuse_if_locked(path: str) -> None:
  lock_path = os.path.join(path, LOCK_FILE)
  if path in _HELD_LOCKS or not os.path.isfile(lock_path):
    return
  try:
    fd = os.open(lock_path, os.O_RDONLY)
  except OSError:
    return  # Unreadable: not a lock of ours; the rules below decide.
  try:
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
  except BlockingIOError:
    raise _in_use(path, fd) from None
  finally:
    os.close(fd)


def _in_use(path: str, fd: int) -> RunDirError:
  holder = os.pread(fd, 256, 0).decode(errors='replace').split()
  by = (f'pid {holder[1]} on {holder[0]}' if len(holder) == 2
        else 'another launcher')
  return RunDirError(f'--run_dir {path} is in use by {by}')


def _check_ours(path: str, names: Sequence[str]) -> None:
  """--overwrite deletes everything: only ever a run's own directory."""
  real = os.path.realpath(path)
  for anchor in (os.getcwd(), os.path.expanduser('~')):
    anchor = os.path.realpath(anchor)
    if anchor == real or anchor.startswith(real.rstrip(os.sep) + os.sep):
      raise RunDirError(f'--overwrite of {path}: it is the current or home '
                        'directory or one above them; not emptying it')
  legacy_run = CONFIG_JSON in names and (SUMMARY_JSON in names or
                                         EVALUATOR_CSV in names)
  if not (os.path.exists(os.path.join(path, MARKER)) or legacy_run):
    raise RunDirError(f'--overwrite of {path}: it holds files no run wrote; '
                      'not emptying it')


def _clear_dir(path: str) -> None:
  import shutil  # pylint: disable=g-import-not-at-top
  for name in os.listdir(path):
    if name == LOCK_FILE:
      continue  # Ours now: removing it would let a second launcher in.
    full = os.path.join(path, name)
    if os.path.isdir(full) and not os.path.islink(full):
      shutil.rmtree(full)
    else:
      os.remove(full)


def write_bytes_atomic(path: str, payload: bytes,
                       durable: bool = True) -> None:
  """Readers see the old file or the new one, never half of one, and after
  a power loss or an eviction the new one is on disk or the old one is: the
  payload is fsynced before the rename and the directory after it (unless
  not `durable`: a heartbeat rewritten every second is no state). A write
  that fails leaves no temporary file behind."""
  directory = os.path.dirname(path) or '.'
  fd, temporary = tempfile.mkstemp(dir=directory, suffix='.tmp',
                                   prefix='.' + os.path.basename(path) + '.')
  try:
    with os.fdopen(fd, 'wb') as handle:
      handle.write(payload)
      handle.flush()
      if durable:
        os.fsync(handle.fileno())
    os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide it from peers.
    os.replace(temporary, path)
  except BaseException:
    try:
      os.unlink(temporary)
    except OSError:
      pass  # Renamed already, or never made.
    raise
  if durable:
    fsync_directory(directory)


def fsync_directory(directory: str) -> None:
  """Makes a rename in `directory` durable (the entry, not just the data)."""
  fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def fsync_file(path: str) -> None:
  """Flushes an appended file (a CSV at a segment's end) to disk; a file
  that is missing is nothing to flush."""
  try:
    fd = os.open(path, os.O_RDONLY)
  except FileNotFoundError:
    return
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def write_json_atomic(path: str, payload: Mapping[str, Any]) -> None:
  write_bytes_atomic(path, (json.dumps(payload, indent=2, sort_keys=True,
                                       default=str) + '\n').encode())


class CsvAppender:
  """Appends dict rows to a CSV shared by processes; header written once."""

  def __init__(self, path: str, fields: Sequence[str]):
    self._path = path
    self._fields = tuple(fields)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
      if os.fstat(fd).st_size == 0:
        self._write(fd, dict(zip(self._fields, self._fields)))
    finally:
      os.close(fd)

  def _write(self, fd: int, row: Mapping[str, Any]) -> None:
    buffer = io.StringIO()
    csv.DictWriter(buffer, self._fields, extrasaction='raise',
                   lineterminator='\n').writerow(
                       {k: _format(row.get(k, '')) for k in self._fields})
    os.write(fd, buffer.getvalue().encode())

  def append(self, row: Mapping[str, Any]) -> None:
    fd = os.open(self._path, os.O_WRONLY | os.O_APPEND)
    try:
      self._write(fd, row)
    finally:
      os.close(fd)


def _format(value: Any) -> Any:
  return f'{value:.6g}' if isinstance(value, float) else value


def finished_status(path: str) -> Optional[str]:
  """The status summary.json in `path` records, or None before it has one."""
  summary = os.path.join(path, SUMMARY_JSON)
  if not os.path.exists(summary):
    return None
  with open(summary) as handle:
    return json.load(handle).get('status')


def read_csv(path: str) -> Sequence[Dict[str, str]]:
  if not os.path.exists(path):
    return []
  with open(path, newline='') as handle:
    return list(csv.DictReader(handle))

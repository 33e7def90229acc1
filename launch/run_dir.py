"""The run-directory contract: everything a run produces lives under run_dir.

CSV rows are appended with one os.write() on an O_APPEND descriptor, so
several node processes can share a file without interleaving lines, and a
killed run leaves every completed row on disk.
"""
import csv
import io
import json
import os
import tempfile
from typing import Any, Dict, Mapping, Sequence

EVALUATOR_CSV = 'evaluator.csv'
ACTORS_CSV = 'actors.csv'
QUANTIZER_CSV = 'quantizer.csv'
COMPRESSION_CSV = 'compression.csv'
SUMMARY_JSON = 'summary.json'
CONFIG_JSON = 'config.json'

EVALUATOR_FIELDS = ('wall_time_s', 'actor_steps', 'learner_steps',
                    'episode_return', 'policy_version', 'fp32_return')
ACTORS_FIELDS = ('wall_time_s', 'actor_id', 'exploration', 'steps',
                 'steps_per_s', 'mean_inference_us', 'policy_version',
                 'load_failures', 'env_s', 'inference_s', 'adder_s',
                 'refresh_s')
QUANTIZER_FIELDS = ('wall_time_s', 'version', 'learner_steps', 'precision',
                    'status', 'convert_s', 'model_bytes', 'max_abs_err',
                    'mean_rel_err', 'p95_rel_err', 'argmax_mismatch',
                    'calibration_source', 'route')


class RunDirError(ValueError):
  """The run directory cannot be used as asked."""


def prepare_run_dir(path: str, overwrite: bool, resume: bool = False) -> str:
  """Creates run_dir, refusing to clobber a previous run's files."""
  path = os.path.abspath(os.path.expanduser(path))
  if os.path.exists(path) and not os.path.isdir(path):
    raise RunDirError(f'--run_dir {path} exists and is not a directory')
  if os.path.isdir(path) and os.listdir(path) and not (overwrite or resume):
    raise RunDirError(f'--run_dir {path} is not empty; pass --overwrite to '
                      'replace it or --resume to continue it')
  if overwrite and not resume and os.path.isdir(path):
    _clear_dir(path)
  try:
    os.makedirs(path, exist_ok=True)
    probe = tempfile.NamedTemporaryFile(dir=path)
    probe.close()
  except OSError as error:
    raise RunDirError(f'--run_dir {path} is not writable: {error}') from error
  return path


def _clear_dir(path: str) -> None:
  import shutil  # pylint: disable=g-import-not-at-top
  for name in os.listdir(path):
    full = os.path.join(path, name)
    if os.path.isdir(full) and not os.path.islink(full):
      shutil.rmtree(full)
    else:
      os.remove(full)


def write_bytes_atomic(path: str, payload: bytes) -> None:
  """Readers see the old file or the new one, never half of one."""
  directory = os.path.dirname(path) or '.'
  with tempfile.NamedTemporaryFile('wb', dir=directory, delete=False,
                                   suffix='.tmp') as handle:
    handle.write(payload)
  os.replace(handle.name, path)


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


def read_csv(path: str) -> Sequence[Dict[str, str]]:
  if not os.path.exists(path):
    return []
  with open(path, newline='') as handle:
    return list(csv.DictReader(handle))

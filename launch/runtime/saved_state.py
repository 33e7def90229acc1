"""A run's saved state, read back before a resume starts anything.

A truncated or corrupted file (a power loss, an evicted node, a full disk)
must not end a resume after every node has started, nor be restored. So
the launcher reads every piece first: each learner checkpoint's tensors
(checksummed by TF), counts.json, Reverb's replay checkpoint (its TFRecords
are checksummed), and the quantizer's epoch. It resumes from the newest
learner checkpoint that restores, with the counts saved with it (the
learner records them in checkpoints/saves.json at each save), and says
whether the replay it finds belongs to that save (`full`), to another one
(`partly`; Reverb keeps only its newest) or is absent or damaged (`none`).

When nothing restores, `plan` refuses naming the damaged file, having
written nothing. When it falls back, `apply` (run under the run's lock)
moves each damaged file into damaged/ (kept for a post-mortem, never
deleted) and points the learner's index and counts.json at the save it
chose. The evaluator's, quantizer's and compression rows a killed segment
logged past that save go to damaged/ too (`lost_rows`): the resumed run
logs those steps again, and each CSV tells one history.
"""
import csv
import glob
import io
import json
import math
import os
import re
import shutil
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from launch.config import ResumePoint
from launch.runtime import run_dir as run_dir_lib

# Quantizer versions are epoch * VERSIONS_PER_EPOCH + n (quantizer node).
VERSIONS_PER_EPOCH = 1_000_000
_CHECKPOINT_NUMBER = re.compile(r'^ckpt-(\d+)\.index$')


class DamagedFileError(ValueError):
  """A state file that does not parse as what it must hold."""


def read_counts(path: str) -> Dict[str, float]:
  """counts.json: a JSON object of finite numbers >= 0.

  Raises:
    DamagedFileError: naming the file and what is wrong with it.
  """
  try:
    with open(path) as handle:
      counts = json.load(handle)
  except (OSError, ValueError) as error:
    raise DamagedFileError(f'{path}: {_first_line(error)}') from error
  if not isinstance(counts, dict) or not all(
      isinstance(value, (int, float)) and not isinstance(value, bool) and
      math.isfinite(value) and value >= 0 for value in counts.values()):
    raise DamagedFileError(f'{path}: not an object of step counts')
  return counts


def read_epoch(path: str) -> int:
  """The quantizer epoch file: one integer >= 0.

  Raises:
    DamagedFileError: naming the file.
  """
  try:
    with open(path) as handle:
      text = handle.read().strip()
    epoch = int(text)
  except (OSError, ValueError) as error:
    raise DamagedFileError(f'{path}: {_first_line(error)}') from error
  if epoch < 0:
    raise DamagedFileError(f'{path}: epoch {epoch} is negative')
  return epoch


def next_quantizer_epoch(run_dir: str) -> int:
  """0 for a run's first quantizer, then one more per (re)start; an epoch
  file that is missing or damaged is recovered from quantizer.csv's
  versions, so versions never go back."""
  path = os.path.join(run_dir, run_dir_lib.EPOCH_FILE)
  try:
    previous = read_epoch(path)
  except DamagedFileError:
    previous = _epoch_of_published_versions(run_dir)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  run_dir_lib.write_bytes_atomic(path, f'{previous + 1}\n'.encode())
  return previous + 1


def _epoch_of_published_versions(run_dir: str) -> int:
  """The newest epoch quantizer.csv shows (-1 before any publish)."""
  try:
    rows = run_dir_lib.read_csv(os.path.join(run_dir,
                                             run_dir_lib.QUANTIZER_CSV))
  except (OSError, ValueError, csv.Error):
    rows = []
  versions = [int(row['version']) for row in rows
              if str(row.get('version', '')).isdigit()]
  return max(versions) // VERSIONS_PER_EPOCH if versions else -1


def read_saves(run_dir: str) -> Dict[str, Dict[str, Any]]:
  """checkpoints/saves.json, or {} when it is missing or damaged
  (counts.json is then the one source of counts)."""
  try:
    with open(os.path.join(run_dir, run_dir_lib.SAVES_JSON)) as handle:
      saves = json.load(handle)
  except (OSError, ValueError):
    return {}
  return saves if isinstance(saves, dict) else {}


def record_save(run_dir: str, checkpoint: str, counts: Mapping[str, float],
                replay: Optional[str], replay_saved: bool,
                keep: List[str]) -> None:
  """Adds the learner's save of `checkpoint` to checkpoints/saves.json
  (durably), keeping only the checkpoints in `keep` (the ones on disk)."""
  saves = read_saves(run_dir)
  missed = saves.pop('replay_missed', [])
  if not replay_saved:
    missed.append(round(time.time(), 1))
  saves = {name: entry for name, entry in saves.items() if name in keep}
  saves[checkpoint] = dict(counts=dict(counts), replay=replay,
                           replay_saved=replay_saved)
  run_dir_lib.write_json_atomic(os.path.join(run_dir, run_dir_lib.SAVES_JSON),
                                dict(saves, replay_missed=missed))


def replay_saves_missed(run_dir: str, since: float = 0.0) -> int:
  """Replay checkpoints that missed their bound since `since` (a time)."""
  missed = read_saves(run_dir).get('replay_missed', [])
  return sum(1 for when in missed
             if isinstance(when, (int, float)) and when >= since)


def learner_checkpoints(run_dir: str) -> List[str]:
  """The learner checkpoints on disk ('ckpt-N'), newest first; read from
  the files themselves, since the index may be the damaged file."""
  directory = os.path.join(run_dir, run_dir_lib.LEARNER_DIR)
  numbers = []
  for name in os.listdir(directory) if os.path.isdir(directory) else ():
    match = _CHECKPOINT_NUMBER.match(name)
    if match:
      numbers.append(int(match.group(1)))
  return [f'ckpt-{number}' for number in sorted(numbers, reverse=True)]


def learner_damage(run_dir: str, checkpoint: str) -> Optional[Tuple[str, str]]:
  """(file, why) if `checkpoint` would not restore whole and finite, else
  None: its index, then every tensor (TF checks each one's checksum)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  prefix = os.path.join(run_dir, run_dir_lib.LEARNER_DIR, checkpoint)
  try:
    reader = tf.train.load_checkpoint(prefix)
  except Exception as error:  # pylint: disable=broad-except
    return prefix + '.index', _first_line(error)
  data_files = sorted(glob.glob(prefix + '.data-*')) or [prefix + '.data']
  for name in sorted(reader.get_variable_to_shape_map()):
    try:
      value = reader.get_tensor(name)
    except Exception as error:  # pylint: disable=broad-except
      return data_files[0], _first_line(error)
    if (isinstance(value, np.ndarray) and value.dtype.kind == 'f' and
        not np.all(np.isfinite(value))):
      return data_files[0], f'tensor {name} is not finite'
  return None


def replay_checkpoint(run_dir: str) -> Optional[str]:
  """The replay checkpoint Reverb would load: the newest directory under
  replay_checkpoints/ that it finished (it writes DONE last)."""
  root = os.path.join(run_dir, run_dir_lib.REPLAY_DIR)
  if not os.path.isdir(root):
    return None
  done = [name for name in sorted(os.listdir(root))
          if os.path.isfile(os.path.join(root, name, 'DONE'))]
  return os.path.join(root, done[-1]) if done else None


def replay_damage(path: str) -> Optional[Tuple[str, str]]:
  """(file, why) if a record of the replay checkpoint at `path` fails its
  checksum or is cut short, else None (Reverb writes ZLIB TFRecords)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  records = sorted(glob.glob(os.path.join(path, '*.tfrecord')))
  if not records:
    return path, 'no tfrecord files'
  for record_file in records:
    try:
      for _ in tf.data.TFRecordDataset(record_file, compression_type='ZLIB'):
        pass
    except Exception as error:  # pylint: disable=broad-except
      return record_file, _first_line(error)
  return None


def plan(run_dir: str) -> ResumePoint:
  """The state a resume of `run_dir` restores; reads only.

  Raises:
    run_dir_lib.RunDirError: no learner checkpoint restores, or none has
      counts to go with it (naming the damaged file).
  """
  set_aside = []
  checkpoints = learner_checkpoints(run_dir)
  saves = read_saves(run_dir)
  counts_path = os.path.join(run_dir, run_dir_lib.COUNTS_JSON)
  try:
    latest_counts = read_counts(counts_path)
    counts_error = None
  except DamagedFileError as error:
    latest_counts, counts_error = None, str(error)
    set_aside.append((counts_path, str(error).split(': ', 1)[-1]))
  # The newest checkpoint that restores and has counts to go with it: one
  # whose save was cut short before its counts were recorded is passed over
  # (not damaged: the learner's index is pointed past it).
  chosen = restorable = None
  damaged = []
  for checkpoint in checkpoints:
    damage = learner_damage(run_dir, checkpoint)
    if damage is not None:
      damaged.append(damage)
      continue
    restorable = restorable or checkpoint
    saved = saves.get(checkpoint) or {}
    if checkpoint == checkpoints[0] and latest_counts is not None:
      chosen, counts = checkpoint, latest_counts
      counts_from = run_dir_lib.COUNTS_JSON
      break
    if _valid_counts(saved.get('counts')):
      chosen, counts = checkpoint, saved['counts']
      counts_from = f'{run_dir_lib.SAVES_JSON} ({checkpoint})'
      break
  set_aside = damaged + set_aside
  if restorable is None:
    file, why = damaged[0] if damaged else (
        os.path.join(run_dir, run_dir_lib.LEARNER_DIR), 'no checkpoint files')
    raise run_dir_lib.RunDirError(
        f'--resume of {run_dir}: no learner checkpoint restores: {file}: '
        f'{why}; nothing was started or changed')
  if chosen is None:
    why = counts_error or (
        f'{counts_path}: its counts are a later save\'s than {restorable}, '
        f'and {run_dir_lib.SAVES_JSON} has none for it or any older '
        'checkpoint')
    raise run_dir_lib.RunDirError(
        f'--resume of {run_dir}: no counts to go with {restorable}: {why}; '
        'nothing was started or changed')
  replay, replay_path = _replay_status(run_dir, chosen, checkpoints, saved,
                                       set_aside)
  epoch_path = os.path.join(run_dir, run_dir_lib.EPOCH_FILE)
  if os.path.exists(epoch_path):
    try:
      read_epoch(epoch_path)
    except DamagedFileError as error:
      set_aside.append((epoch_path, str(error).split(': ', 1)[-1]))
  return ResumePoint(
      learner_checkpoint=chosen, newest_checkpoint=checkpoints[0],
      counts=tuple(sorted(counts.items())), counts_from=counts_from,
      replay=replay, replay_checkpoint=_relative(run_dir, replay_path),
      set_aside=tuple((_relative(run_dir, file), why)
                      for file, why in set_aside))


def _replay_status(run_dir, chosen, checkpoints, saved, set_aside):
  """('full' | 'partly' | 'none', the replay checkpoint Reverb will load)."""
  path = replay_checkpoint(run_dir)
  if path is None:
    return 'none', None
  damage = replay_damage(path)
  if damage:
    set_aside.append((path, f'{os.path.basename(damage[0])}: {damage[1]}'))
    return 'none', None
  if saved:  # The learner recorded which replay checkpoint went with it.
    same = (saved.get('replay_saved') and saved.get('replay') and
            os.path.basename(saved['replay'].rstrip('/')) ==
            os.path.basename(path))
    return ('full' if same else 'partly'), path
  # A run from before checkpoints/saves.json: the newest replay goes with the
  # newest learner checkpoint.
  return ('full' if chosen == checkpoints[0] else 'partly'), path


def _valid_counts(counts) -> bool:
  return isinstance(counts, dict) and all(
      isinstance(value, (int, float)) and math.isfinite(value)
      for value in counts.values())


def apply(run_dir: str, point: ResumePoint) -> None:
  """Makes `run_dir` restore `point` (under the run's lock, before any
  node starts): damaged files moved aside, the learner's index and
  counts.json pointing at the chosen save, each write durable."""
  aside = os.path.join(run_dir, run_dir_lib.SET_ASIDE_DIR,
                       time.strftime('%Y%m%dT%H%M%S'))
  if point.set_aside:
    for relative, _ in point.set_aside:
      for source in _files_of(run_dir, relative):
        target = os.path.join(aside, os.path.relpath(source, run_dir))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.move(source, target)
    run_dir_lib.write_json_atomic(
        os.path.join(aside, run_dir_lib.SET_ASIDE_WHY), dict(point.set_aside))
  if point.learner_checkpoint != point.newest_checkpoint or _index_stale(
      run_dir, point.learner_checkpoint):
    _write_learner_index(run_dir, point.learner_checkpoint)
  counts_path = os.path.join(run_dir, run_dir_lib.COUNTS_JSON)
  if point.counts_from != run_dir_lib.COUNTS_JSON:
    if os.path.exists(counts_path):  # Valid, but a later save's.
      os.makedirs(os.path.join(aside, run_dir_lib.CHECKPOINTS_DIR),
                  exist_ok=True)
      shutil.move(counts_path, os.path.join(aside, run_dir_lib.COUNTS_JSON))
    run_dir_lib.write_json_atomic(counts_path, dict(point.counts))
  set_aside_lost_rows(run_dir, dict(point.counts), aside)


# Per CSV, its columns that count steps, and the saved count each is
# checked against. actors.csv and startup.csv describe processes (per-actor
# throughput, start-up events), not the learning history: kept whole.
STEP_COLUMNS = {
    run_dir_lib.EVALUATOR_CSV: {'actor_steps': 'actor_steps',
                                'learner_steps': 'learner_steps'},
    run_dir_lib.QUANTIZER_CSV: {'learner_steps': 'learner_steps'},
    run_dir_lib.COMPRESSION_CSV: {'learner_step': 'learner_steps'},
}


def set_aside_lost_rows(run_dir: str, counts: Mapping[str, float],
                        aside: str) -> None:
  """Moves the rows logged past the restored `counts` (and rows a kill
  cut short) from each STEP_COLUMNS CSV to `aside`, same name; the kept
  rows are rewritten atomically."""
  for name, columns in STEP_COLUMNS.items():
    path = os.path.join(run_dir, name)
    if not os.path.exists(path):
      continue
    with open(path, newline='') as handle:
      reader = csv.reader(handle)
      header = next(reader, None)
      rows = list(reader)
    if not header:
      continue
    limits = {header.index(column): counts[count]
              for column, count in columns.items()
              if column in header and count in counts}
    kept, lost = [], []
    for row in rows:
      (lost if _past(row, len(header), limits) else kept).append(row)
    if not lost:
      continue
    os.makedirs(aside, exist_ok=True)
    for target, chosen in ((os.path.join(aside, name), lost), (path, kept)):
      text = io.StringIO()
      csv.writer(text).writerows([header, *chosen])
      run_dir_lib.write_bytes_atomic(target, text.getvalue().encode())


def _past(row: List[str], width: int, limits: Mapping[int, float]) -> bool:
  """A row past the saved counts, or cut short."""
  if len(row) != width:
    return True
  try:
    return any(float(row[index]) > limit for index, limit in limits.items())
  except ValueError:
    return True


def _files_of(run_dir: str, relative: str) -> List[str]:
  """A damaged learner checkpoint is several files; anything else is one
  file or directory."""
  path = os.path.join(run_dir, relative)
  match = re.match(r'^(.*ckpt-\d+)\.(index|data.*)$', path)
  if match and os.path.dirname(relative) == run_dir_lib.LEARNER_DIR:
    return sorted(glob.glob(match.group(1) + '.*'))
  return [path] if os.path.exists(path) else []


def _index_stale(run_dir: str, checkpoint: str) -> bool:
  try:
    with open(os.path.join(run_dir, run_dir_lib.LEARNER_INDEX)) as handle:
      return f'model_checkpoint_path: "{checkpoint}"' not in handle.read()
  except OSError:
    return True


def _write_learner_index(run_dir: str, latest: str) -> None:
  """The CheckpointManager's index, naming `latest` and the older
  checkpoints on disk, with their files' times (so the manager still
  rotates them out)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  directory = os.path.join(run_dir, run_dir_lib.LEARNER_DIR)
  number = int(latest.split('-')[1])
  kept = [name for name in reversed(learner_checkpoints(run_dir))
          if int(name.split('-')[1]) <= number]
  times = [os.path.getmtime(os.path.join(directory, name + '.index'))
           for name in kept]
  state = tf.compat.v1.train.generate_checkpoint_state_proto(
      directory, latest, all_model_checkpoint_paths=kept,
      all_model_checkpoint_timestamps=times,
      last_preserved_timestamp=min(times) - 1.0)
  run_dir_lib.write_bytes_atomic(
      os.path.join(run_dir, run_dir_lib.LEARNER_INDEX),
      text_format.MessageToString(state).encode())


def _relative(run_dir: str, path: Optional[str]) -> Optional[str]:
  return None if path is None else os.path.relpath(path, run_dir)


def _first_line(error: BaseException) -> str:
  text = str(error).strip().splitlines()
  return (text[0] if text else type(error).__name__)[:300]

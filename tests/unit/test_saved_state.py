"""A resume reads the saved state back before anything starts, on the real
TF checkpoints and the real Reverb replay checkpoint a run writes: damage
falls back to the newest save that restores, or is refused naming the file,
having changed nothing."""
import json
import os

import numpy as np
import pytest
import reverb
import tensorflow as tf

from launch.runtime import run_dir as run_dir_lib
from launch.runtime import runner
from launch.runtime import saved_state

# Two learner saves, as the learner node makes them: the checkpoint, the
# replay checkpoint, the counter's counts.json, and the record of the save.
FIRST_COUNTS = {'actor_steps': 100, 'learner_steps': 10}
SECOND_COUNTS = {'actor_steps': 200, 'learner_steps': 20}


def _saved_run(run_dir, replay_with_second=True):
  """run_dir after two saves; the learner's weight is 1.0 then 2.0."""
  weight = tf.Variable(np.full([64, 64], 1.0, np.float32))
  manager = tf.train.CheckpointManager(
      tf.train.Checkpoint(weight=weight),
      os.path.join(run_dir, run_dir_lib.LEARNER_DIR), max_to_keep=2)
  server = reverb.Server(
      [reverb.Table.queue('priority_table', 100)],
      checkpointer=reverb.checkpointers.DefaultCheckpointer(
          os.path.join(run_dir, run_dir_lib.REPLAY_DIR)))
  client = reverb.Client(f'localhost:{server.port}')
  try:
    for value, counts in ((1.0, FIRST_COUNTS), (2.0, SECOND_COUNTS)):
      weight.assign(tf.fill([64, 64], value))
      checkpoint = os.path.basename(manager.save())
      client.insert(np.full([8], value, np.float32), {'priority_table': 1.0})
      replay = client.checkpoint()
      run_dir_lib.write_json_atomic(
          os.path.join(run_dir, run_dir_lib.COUNTS_JSON), counts)
      saved_state.record_save(
          str(run_dir), checkpoint, counts, replay,
          replay_saved=value == 1.0 or replay_with_second,
          keep=[os.path.basename(path) for path in manager.checkpoints])
  finally:
    server.stop()
  return weight


def _listing(path):
  return sorted((str(p.relative_to(path)), p.stat().st_mtime_ns)
                for p in path.rglob('*'))


def _truncate(path, fraction=0.3):
  os.truncate(path, int(os.path.getsize(path) * fraction))


def _data_file(run_dir, checkpoint):
  directory = run_dir / run_dir_lib.LEARNER_DIR
  name, = [n for n in os.listdir(directory)
           if n.startswith(checkpoint + '.data')]
  return directory / name


def _restored_weight(run_dir):
  """What the learner node restores: its CheckpointManager's latest, every
  object matched."""
  weight = tf.Variable(np.zeros([64, 64], np.float32))
  checkpoint = tf.train.Checkpoint(weight=weight)
  manager = tf.train.CheckpointManager(
      checkpoint, os.path.join(run_dir, run_dir_lib.LEARNER_DIR),
      max_to_keep=2)
  checkpoint.restore(manager.latest_checkpoint
                     ).assert_existing_objects_matched()
  return float(weight.numpy()[0, 0]), manager


def test_an_intact_run_resumes_from_its_newest_save(tmp_path):
  _saved_run(str(tmp_path))
  point = saved_state.plan(str(tmp_path))
  assert point.learner_checkpoint == point.newest_checkpoint == 'ckpt-2'
  assert dict(point.counts) == SECOND_COUNTS
  assert point.counts_from == run_dir_lib.COUNTS_JSON
  assert point.replay == 'full' and not point.set_aside
  before = _listing(tmp_path)
  saved_state.apply(str(tmp_path), point)
  assert _listing(tmp_path) == before  # Nothing to change.


def test_a_truncated_learner_checkpoint_falls_back_with_its_counts(
    tmp_path):
  _saved_run(str(tmp_path))
  damaged = _data_file(tmp_path, 'ckpt-2')
  _truncate(damaged)
  point = saved_state.plan(str(tmp_path))
  assert point.learner_checkpoint == 'ckpt-1'
  assert point.newest_checkpoint == 'ckpt-2'
  assert dict(point.counts) == FIRST_COUNTS  # The counts saved with it.
  assert point.counts_from.startswith(run_dir_lib.SAVES_JSON)
  assert point.replay == 'partly'  # Reverb kept the second save's only.
  assert [file for file, _ in point.set_aside] == [
      os.path.relpath(damaged, tmp_path)]
  saved_state.apply(str(tmp_path), point)
  # The learner node's own restore now finds ckpt-1, whole.
  value, manager = _restored_weight(str(tmp_path))
  assert value == 1.0
  assert saved_state.read_counts(
      str(tmp_path / run_dir_lib.COUNTS_JSON)) == FIRST_COUNTS
  # Kept for a post-mortem, not deleted; the manager's next save is ckpt-2.
  aside = list((tmp_path / run_dir_lib.SET_ASIDE_DIR).rglob('ckpt-2.*'))
  assert len(aside) == 2
  assert os.path.basename(manager.save()) == 'ckpt-2'


def test_a_corrupted_byte_in_the_newest_checkpoint_falls_back(tmp_path):
  _saved_run(str(tmp_path))
  data = _data_file(tmp_path, 'ckpt-2')
  payload = bytearray(data.read_bytes())
  payload[len(payload) // 2] ^= 0xff
  data.write_bytes(bytes(payload))
  assert saved_state.plan(str(tmp_path)).learner_checkpoint == 'ckpt-1'


def test_no_checkpoint_that_restores_is_refused_naming_the_file(tmp_path):
  _saved_run(str(tmp_path))
  for checkpoint in ('ckpt-1', 'ckpt-2'):
    _truncate(_data_file(tmp_path, checkpoint))
  before = _listing(tmp_path)
  with pytest.raises(run_dir_lib.RunDirError) as error:
    saved_state.plan(str(tmp_path))
  message = str(error.value)
  assert message.startswith(f'--resume of {tmp_path}: no learner checkpoint '
                            f'restores: {_data_file(tmp_path, "ckpt-2")}: ')
  assert '\n' not in message
  assert _listing(tmp_path) == before


def test_a_truncated_counts_json_takes_the_counts_of_the_save(tmp_path):
  _saved_run(str(tmp_path))
  counts = tmp_path / run_dir_lib.COUNTS_JSON
  _truncate(counts, 0.5)
  point = saved_state.plan(str(tmp_path))
  assert point.learner_checkpoint == 'ckpt-2'
  assert dict(point.counts) == SECOND_COUNTS
  saved_state.apply(str(tmp_path), point)
  assert saved_state.read_counts(str(counts)) == SECOND_COUNTS


def test_a_save_cut_short_before_its_record_falls_back_to_the_last_whole(
    tmp_path):
  # Killed between the second checkpoint and its record (saves.json is
  # written last), and counts.json then lost: the second checkpoint is
  # whole but has no counts, so the resume takes the first with its own.
  _saved_run(str(tmp_path))
  saves_path = tmp_path / run_dir_lib.SAVES_JSON
  saves = json.loads(saves_path.read_text())
  del saves['ckpt-2']
  saves_path.write_text(json.dumps(saves))
  (tmp_path / run_dir_lib.COUNTS_JSON).write_text('')
  point = saved_state.plan(str(tmp_path))
  assert point.learner_checkpoint == 'ckpt-1'
  assert dict(point.counts) == FIRST_COUNTS
  assert [file for file, _ in point.set_aside] == [run_dir_lib.COUNTS_JSON]
  saved_state.apply(str(tmp_path), point)
  assert _restored_weight(str(tmp_path))[0] == 1.0


def test_a_truncated_counts_json_with_no_record_is_refused(tmp_path):
  _saved_run(str(tmp_path))
  (tmp_path / run_dir_lib.SAVES_JSON).unlink()  # A run from before it.
  (tmp_path / run_dir_lib.COUNTS_JSON).write_text('{"actor_steps": 2')
  before = _listing(tmp_path)
  with pytest.raises(run_dir_lib.RunDirError) as error:
    saved_state.plan(str(tmp_path))
  assert (f'no counts to go with ckpt-2: '
          f'{tmp_path / run_dir_lib.COUNTS_JSON}: ') in str(error.value)
  assert _listing(tmp_path) == before


def test_a_truncated_replay_checkpoint_is_set_aside_not_loaded(tmp_path):
  _saved_run(str(tmp_path))
  replay = saved_state.replay_checkpoint(str(tmp_path))
  _truncate(os.path.join(replay, 'chunks.tfrecord'), 0.5)
  point = saved_state.plan(str(tmp_path))
  assert point.replay == 'none' and point.replay_checkpoint is None
  saved_state.apply(str(tmp_path), point)
  assert not os.path.exists(replay)
  # The replay node then starts, with an empty table.
  server = reverb.Server(
      [reverb.Table.queue('priority_table', 100)],
      checkpointer=reverb.checkpointers.DefaultCheckpointer(
          str(tmp_path / run_dir_lib.REPLAY_DIR)))
  try:
    info = reverb.Client(f'localhost:{server.port}').server_info()
    assert info['priority_table'].current_size == 0
  finally:
    server.stop()


def test_a_replay_save_that_missed_its_bound_is_on_record(tmp_path):
  _saved_run(str(tmp_path), replay_with_second=False)
  assert saved_state.replay_saves_missed(str(tmp_path)) == 1
  # Its replay is not the one saved with the learner's checkpoint.
  assert saved_state.plan(str(tmp_path)).replay == 'partly'


@pytest.mark.parametrize('text', ['', '{"actor_steps": 1', '[1, 2]',
                                  '{"actor_steps": NaN}',
                                  '{"actor_steps": -3}'])
def test_damaged_counts_are_named(tmp_path, text):
  path = tmp_path / 'counts.json'
  path.write_text(text)
  with pytest.raises(saved_state.DamagedFileError, match=str(path)):
    saved_state.read_counts(str(path))


def test_a_damaged_epoch_is_recovered_from_the_published_versions(
    tmp_path):
  epoch = tmp_path / run_dir_lib.EPOCH_FILE
  epoch.parent.mkdir()
  assert saved_state.next_quantizer_epoch(str(tmp_path)) == 0
  assert saved_state.next_quantizer_epoch(str(tmp_path)) == 1
  run_dir_lib.CsvAppender(str(tmp_path / run_dir_lib.QUANTIZER_CSV),
                          run_dir_lib.QUANTIZER_FIELDS).append(
                              dict(version=3 * saved_state.VERSIONS_PER_EPOCH
                                   + 5))
  epoch.write_bytes(b'\x00\x00')  # A power loss mid-write.
  assert saved_state.next_quantizer_epoch(str(tmp_path)) == 4
  assert epoch.read_text() == '4\n'


def test_rows_logged_past_the_restored_save_are_set_aside(tmp_path):
  """A segment killed after its last save logged steps the resume takes
  again: those rows (and one the kill cut short) leave the CSVs for
  damaged/, so each CSV tells one history; process logs stay whole."""
  (tmp_path / 'evaluator.csv').write_text(
      'wall_time_s,actor_steps,learner_steps,episode_return\n'
      '10,1000,90,-1200\n20,2000,190,-900\n30,3000,290,-700\n40,40')
  (tmp_path / 'compression.csv').write_text(
      'wall_time_s,learner_step,average_cr\n5,100,0.1\n25,250,0.2\n')
  actors = 'wall_time_s,actor_id,steps\n35,0,2900\n'
  (tmp_path / 'actors.csv').write_text(actors)
  aside = tmp_path / 'damaged' / 'now'
  saved_state.set_aside_lost_rows(
      str(tmp_path), {'actor_steps': 2100, 'learner_steps': 200}, str(aside))
  assert (tmp_path / 'evaluator.csv').read_text().splitlines()[1:] == [
      '10,1000,90,-1200', '20,2000,190,-900']
  assert (aside / 'evaluator.csv').read_text().splitlines()[1:] == [
      '30,3000,290,-700', '40,40']
  assert (aside / 'compression.csv').read_text().splitlines()[1:] == [
      '25,250,0.2']
  assert (tmp_path / 'actors.csv').read_text() == actors
  assert not (aside / 'actors.csv').exists()
  # The clock still counts the time those rows spent.
  assert runner.elapsed_s(str(tmp_path)) == 40.0

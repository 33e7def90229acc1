"""Carbon accounting: a real offline codecarbon run, kill-safety, energy split."""
import csv
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from codecarbon import lock as cc_lock

import quarl
from quarl import carbon

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(quarl.__file__)))


def _burn_cpu(seconds):
  end = time.monotonic() + seconds
  while time.monotonic() < end:
    sum(i * i for i in range(2000))


def _rows(csv_path):
  with open(csv_path, newline='') as f:
    return list(csv.DictReader(f))


def _isolated_env(tmp_path):
  """HOME and cwd in tmp_path, no CODECARBON_* overrides from the caller."""
  env = {k: v for k, v in os.environ.items()
         if not k.lower().startswith('codecarbon_')}
  env['HOME'] = str(tmp_path / 'home')
  env['PYTHONPATH'] = REPO_ROOT
  (tmp_path / 'home').mkdir()
  (tmp_path / 'cwd').mkdir()
  return env


def test_tracker_measures_and_writes_only_into_run_dir(tmp_path, monkeypatch):
  for key in list(os.environ):
    if key.lower().startswith('codecarbon_'):
      monkeypatch.delenv(key)
  monkeypatch.setenv('HOME', _isolated_env(tmp_path)['HOME'])
  monkeypatch.chdir(tmp_path / 'cwd')
  lock_existed = os.path.exists(cc_lock.LOCKFILE)
  run_dir = tmp_path / 'run'

  with carbon.CarbonTracker(str(run_dir), measure_power_secs=1,
                            flush_every_s=1) as tracker:
    _burn_cpu(2.5)
  tracker.stop()  # a second stop is a no-op

  rows = _rows(run_dir / carbon.EMISSIONS_FILE)
  assert len(rows) >= 2  # the first flush at start, then periodic, then stop
  last = rows[-1]
  assert float(last['energy_consumed']) > 0
  assert float(last['emissions']) > 0
  assert last['country_iso_code'] == 'USA'

  summary = tracker.summary()
  for key in ('energy_kwh', 'co2_kg', 'duration_s'):
    assert isinstance(summary[key], float) and summary[key] >= 0
  assert summary['energy_kwh'] == pytest.approx(float(last['energy_consumed']))
  assert summary['duration_s'] >= 2
  assert isinstance(summary['tracking_mode'], str) and summary['tracking_mode']
  assert summary['tracking_mode'] != 'unavailable'
  assert summary['country_iso_code'] == 'USA'

  assert sorted(os.listdir(tmp_path)) == ['cwd', 'home', 'run']
  assert os.listdir(tmp_path / 'home') == []
  assert os.listdir(tmp_path / 'cwd') == []
  assert os.listdir(run_dir) == [carbon.EMISSIONS_FILE]
  if not lock_existed:
    assert not os.path.exists(cc_lock.LOCKFILE)


def test_network_stays_off_despite_hostile_config(tmp_path, monkeypatch):
  home = tmp_path / 'home'
  home.mkdir()
  (home / '.codecarbon.config').write_text(textwrap.dedent("""
      [codecarbon]
      output_methods = csv,api,prometheus
      emissions_endpoint = http://127.0.0.1:9/emissions
      electricitymaps_api_token = secret
      allow_multiple_runs = false
  """))
  monkeypatch.setenv('HOME', str(home))
  monkeypatch.setenv('CODECARBON_CO2_SIGNAL_API_TOKEN', 'secret')
  monkeypatch.setenv('CODECARBON_CLOUD_PROVIDER', 'aws')
  monkeypatch.chdir(home)
  contacts = []  # name lookups and connections, which must both stay empty
  monkeypatch.setattr(socket, 'getaddrinfo',
                      lambda host, *args, **kwargs: contacts.append(host))
  monkeypatch.setattr(socket.socket, 'connect',
                      lambda sock, address: contacts.append(address))
  lock_existed = os.path.exists(cc_lock.LOCKFILE)

  with carbon.CarbonTracker(str(tmp_path / 'run'), measure_power_secs=0.5,
                            flush_every_s=0.5) as tracker:
    _burn_cpu(1.0)
    assert lock_existed or not os.path.exists(cc_lock.LOCKFILE)

  assert contacts == []
  assert tracker.summary()['energy_kwh'] > 0
  assert len(_rows(tmp_path / 'run' / carbon.EMISSIONS_FILE)) >= 2


def test_sigkilled_run_leaves_parseable_emissions(tmp_path):
  run_dir = tmp_path / 'run'
  child = textwrap.dedent("""
      import sys
      from quarl.carbon import CarbonTracker
      CarbonTracker(sys.argv[1], measure_power_secs=0.5,
                    flush_every_s=0.3).start()
      while True:
        sum(i * i for i in range(2000))
  """)
  proc = subprocess.Popen([sys.executable, '-c', child, str(run_dir)],
                          env=_isolated_env(tmp_path), cwd=tmp_path / 'cwd')
  csv_path = run_dir / carbon.EMISSIONS_FILE
  try:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
      if csv_path.exists() and len(_rows(csv_path)) >= 4:  # start + 3 flushes
        break
      assert proc.poll() is None, 'tracker child died on its own'
      time.sleep(0.1)
  finally:
    proc.send_signal(signal.SIGKILL)
    proc.wait()

  rows = _rows(csv_path)
  assert len(rows) >= 4
  energies = [float(row['energy_consumed']) for row in rows]
  assert energies == sorted(energies) and energies[-1] > 0


def test_unknown_country_is_rejected(tmp_path):
  with pytest.raises(ValueError, match='energy mix'):
    carbon.CarbonTracker(str(tmp_path), country_iso_code='XYZ')


def test_node_cpu_recorder_writes_and_reads_back(tmp_path):
  recorder = carbon.NodeCpuRecorder(str(tmp_path), 'actor_0')
  _burn_cpu(0.2)
  written = recorder.record()
  assert written > 0
  assert carbon.read_node_cpu_seconds(str(tmp_path)) == {'actor_0': written}
  assert recorder.close() >= written
  assert os.listdir(tmp_path / carbon.NODE_CPU_DIR) == ['actor_0.json']


def test_node_cpu_recorder_records_periodically_and_at_exit(tmp_path):
  periodic = carbon.NodeCpuRecorder(str(tmp_path), 'learner',
                                    record_every_s=0.05)
  deadline = time.monotonic() + 10
  while 'learner' not in carbon.read_node_cpu_seconds(str(tmp_path)):
    assert time.monotonic() < deadline
    time.sleep(0.05)
  periodic.close()

  child = ('import sys; from quarl.carbon import NodeCpuRecorder; '
           'NodeCpuRecorder(sys.argv[1], "evaluator")')
  subprocess.run([sys.executable, '-c', child, str(tmp_path)], check=True,
                 env=_isolated_env(tmp_path))
  assert carbon.read_node_cpu_seconds(str(tmp_path))['evaluator'] > 0


def test_node_name_must_be_a_plain_file_name(tmp_path):
  with pytest.raises(ValueError):
    carbon.NodeCpuRecorder(str(tmp_path), '../escape')


def test_no_recordings_read_as_empty(tmp_path):
  assert carbon.read_node_cpu_seconds(str(tmp_path)) == {}


def test_node_type_drops_only_a_trailing_index():
  assert carbon.node_type('actor_12') == 'actor'
  assert carbon.node_type('replay_buffer') == 'replay_buffer'
  assert carbon.node_type('learner') == 'learner'
  assert carbon.node_type('actor_x_2') == 'actor_x'


def test_energy_split_is_proportional_and_sums_to_total():
  split = carbon.split_energy_by_node_type(
      {'actor_0': 1.0, 'actor_1': 3.0, 'learner': 4.0, 'evaluator': 0.0}, 2.0)
  assert split == pytest.approx({'actor': 1.0, 'learner': 1.0, 'evaluator': 0.0})
  assert sum(split.values()) == pytest.approx(2.0)


def test_energy_split_with_no_cpu_time_attributes_nothing():
  assert carbon.split_energy_by_node_type({'actor_0': 0.0, 'learner': 0.0},
                                          1.0) == {'actor': 0.0, 'learner': 0.0}
  assert carbon.split_energy_by_node_type({}, 1.0) == {}


def test_energy_split_rejects_negative_inputs():
  with pytest.raises(ValueError):
    carbon.split_energy_by_node_type({'actor_0': -1.0}, 1.0)
  with pytest.raises(ValueError):
    carbon.split_energy_by_node_type({'actor_0': 1.0}, -1.0)


def test_node_cpu_accumulates_over_restarts(tmp_path):
  """A restarted (or resumed) node's new process adds to what its earlier
  processes recorded instead of overwriting it."""
  child = ('import sys, time; from quarl.carbon import NodeCpuRecorder\n'
           'end = time.process_time() + 0.3\n'
           'while time.process_time() < end: pass\n'
           'NodeCpuRecorder(sys.argv[1], "actor_0").close()')
  env = _isolated_env(tmp_path)
  subprocess.run([sys.executable, '-c', child, str(tmp_path)], check=True,
                 env=env)
  first = carbon.read_node_cpu_seconds(str(tmp_path))['actor_0']
  subprocess.run([sys.executable, '-c', child, str(tmp_path)], check=True,
                 env=env)
  second = carbon.read_node_cpu_seconds(str(tmp_path))['actor_0']
  assert second >= first + 0.3
  # This process's own second recorder does not count its seconds twice.
  once = carbon.NodeCpuRecorder(str(tmp_path), 'launcher').close()
  again = carbon.NodeCpuRecorder(str(tmp_path), 'launcher').close()
  assert once <= again < once + 0.5


def _write_emissions(run_dir, rows):
  (run_dir / carbon.EMISSIONS_FILE).write_text(
      'run_id,duration,emissions,energy_consumed\n' + ''.join(
          f'{run_id},{d},{co2},{kwh}\n' for run_id, d, co2, kwh in rows))


def test_segments_split_by_tracker_and_add_up(tmp_path):
  _write_emissions(tmp_path, [('a', 0.5, 0.0, 0.0), ('a', 30.0, 1.0, 2.0),
                              ('b', 40.0, 1.5, 3.0), ('b', 50.0, 2.0, 4.0)])
  segments = carbon.read_segments(str(tmp_path))
  assert [(s.run_id, s.totals) for s in segments] == [
      ('a', (30.0, 2.0, 1.0)), ('b', (50.0, 4.0, 2.0))]
  assert carbon.cumulative_points(str(tmp_path))[-1] == (80.0, 6.0, 3.0)


def test_run_summary_sums_every_segment(tmp_path):
  """A resumed run's tracker (the second here) adds the earlier segment's
  totals to its own, and its rows follow the earlier's on the run's clock."""
  for _ in range(2):
    with carbon.CarbonTracker(str(tmp_path), measure_power_secs=1,
                              flush_every_s=1) as tracker:
      _burn_cpu(0.3)
  earlier, own = carbon.read_segments(str(tmp_path))
  assert earlier.run_id != own.run_id
  whole = tracker.run_summary()
  assert whole['segments'] == 2
  for index, key in ((0, 'duration_s'), (1, 'energy_kwh'), (2, 'co2_kg')):
    assert whole[key] == pytest.approx(tracker.summary()[key] +
                                       earlier.totals[index]), key
  times = [point[0] for point in carbon.cumulative_points(str(tmp_path))]
  assert times == sorted(times)
  assert times[-1] == pytest.approx(earlier.totals[0] + own.totals[0])

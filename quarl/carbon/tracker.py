"""One codecarbon tracker per host per run, strictly offline, flushed often.

Why the explicit options: codecarbon fills every argument left unset from
~/.codecarbon.config, ./.codecarbon.config and CODECARBON_* variables, so a
stray config could turn on the API, an HTTP endpoint or an Electricity Maps
lookup. Everything that could reach the network is pinned here instead.
Why the flushes: codecarbon writes emissions.csv only on flush()/stop(), and a
killed run calls neither, so a background thread flushes every few seconds.
Each flush appends one cumulative row (same run_id); the last row is the total.
"""
import logging
import os
import threading
from typing import Optional

from codecarbon import OfflineEmissionsTracker
from codecarbon.input import DataSource
from codecarbon.output_methods.base_output import BaseOutput
from codecarbon.output_methods.emissions_data import EmissionsData

from quarl.carbon import segments
from quarl.carbon.periodic import PeriodicCall
from quarl.carbon.power_source import UNAVAILABLE, PowerSource, describe_power_source

EMISSIONS_FILE = segments.EMISSIONS_FILE

_log = logging.getLogger(__name__)


class _LatestTotals(BaseOutput):
  """Keeps the newest cumulative totals codecarbon wrote, for `summary()`."""

  def __init__(self):
    self.latest: Optional[EmissionsData] = None

  def out(self, total: EmissionsData, delta: EmissionsData) -> None:
    del delta
    self.latest = total


class CarbonTracker:
  """Measures one host's energy and CO2 for a run into `run_dir/emissions.csv`.

  Start it before the first node and stop it after the last; usable as a
  context manager. codecarbon swallows its own errors, so a tracker that could
  not measure shows up as `tracking_mode == 'unavailable'` in `summary()`.
  """

  def __init__(self, run_dir: str, country_iso_code: str = 'USA',
               measure_power_secs: float = 15.0, flush_every_s: float = 30.0):
    if country_iso_code not in DataSource().get_global_energy_mix_data():
      # codecarbon would only log this and then write no emissions at all.
      raise ValueError(f'codecarbon has no energy mix for {country_iso_code!r}')
    os.makedirs(run_dir, exist_ok=True)
    self._run_dir = run_dir
    self._country_iso_code = country_iso_code
    self._totals = _LatestTotals()
    self._state_lock = threading.Lock()
    self._state = 'new'
    self._power = PowerSource(UNAVAILABLE, None)
    # The constructor logs at INFO/WARNING before applying log_level.
    logging.getLogger('codecarbon').setLevel(logging.ERROR)
    self._tracker = OfflineEmissionsTracker(
        country_iso_code=country_iso_code,
        region=None,
        cloud_provider=None,
        cloud_region=None,
        output_dir=run_dir,
        output_file=EMISSIONS_FILE,
        output_methods=['csv'],
        output_handlers=[self._totals],
        on_csv_write='append',  # a kill mid-write can cost one row, not the file
        emissions_endpoint=None,
        electricitymaps_api_token='',  # '' (not None): None falls back to config
        force_carbon_intensity_g_co2e_kwh=None,
        api_call_interval=-1,
        allow_multiple_runs=True,  # no lock file in the temp dir
        tracking_mode='machine',
        measure_power_secs=measure_power_secs,
        log_level='error',
    )
    self._flusher = PeriodicCall(self._tracker.flush, flush_every_s,
                                 'carbon-flush')

  def start(self) -> None:
    with self._state_lock:
      if self._state != 'new':
        raise RuntimeError(f'CarbonTracker already {self._state}')
      self._state = 'running'
    self._tracker.start()
    self._power = describe_power_source(self._tracker)
    self._tracker.flush()  # the header and a first row exist from the start
    if self._totals.latest is None:
      _log.warning('codecarbon could not start; energy will read as unavailable')
    self._flusher.start()

  def stop(self) -> None:
    """Writes the final row. Safe to call more than once, or before start."""
    with self._state_lock:
      was_running = self._state == 'running'
      self._state = 'stopped'
    if was_running:
      self._flusher.stop()
      self._tracker.stop()

  def summary(self) -> dict:
    """Figures as of the latest flush (or stop): the run summary's energy part."""
    latest = self._totals.latest
    return {
        'energy_kwh': _non_negative(latest and latest.energy_consumed),
        'co2_kg': _non_negative(latest and latest.emissions),
        'duration_s': _non_negative(latest and latest.duration),
        'tracking_mode': self._power.tracking_mode if latest else UNAVAILABLE,
        'cpu_model': (latest and latest.cpu_model) or '',
        'cpu_tdp_w': self._power.cpu_tdp_w,
        'gpu_model': (latest and latest.gpu_model) or '',
        'country_iso_code': self._country_iso_code,
    }

  def run_summary(self) -> dict:
    """`summary()` with energy, CO2 and duration summed over the run's
    earlier segments in emissions.csv too (a resumed run's tracker counts
    only its own launch)."""
    figures = self.summary()
    earlier = [segment for segment in segments.read_segments(self._run_dir)
               if segment.run_id != str(self._tracker.run_id)]
    for index, key in ((0, 'duration_s'), (1, 'energy_kwh'), (2, 'co2_kg')):
      figures[key] += sum(segment.totals[index] for segment in earlier)
    figures['segments'] = len(earlier) + 1
    return figures

  def __enter__(self) -> 'CarbonTracker':
    self.start()
    return self

  def __exit__(self, *exc_info) -> None:
    self.stop()


def _non_negative(value) -> float:
  return max(0.0, float(value or 0.0))

"""Which method codecarbon really used to estimate CPU power on this host.

The energy figure is only as good as this method: 'RAPL' is a hardware energy
counter, 'cpu_load_tdp' is a model (assumed TDP scaled by machine-wide CPU
load), 'constant_tdp' a fixed fraction of an assumed TDP. codecarbon 3.3.2 has
no public accessor for the chosen method, so the reads of its private hardware
objects (`_hardware`, a CPU's `_mode` and `_tdp`) are confined to this module.
"""
import dataclasses
from typing import Optional

from codecarbon.external import hardware as cc_hardware

UNAVAILABLE = 'unavailable'

# codecarbon CPU mode -> the name we report. Modes not listed pass through.
_MODE_NAMES = {
    'intel_rapl': 'RAPL',
    'cpu_load': 'cpu_load_tdp',
    'constant': 'constant_tdp',
}
# Only these modes turn an assumed TDP into watts; RAPL-like modes measure.
_TDP_MODES = ('cpu_load', 'constant')


@dataclasses.dataclass(frozen=True)
class PowerSource:
  tracking_mode: str  # 'RAPL', 'cpu_load_tdp', 'constant_tdp', ... or 'unavailable'
  cpu_tdp_w: Optional[float]  # the TDP the estimate assumed; None when measured


def describe_power_source(tracker) -> PowerSource:
  """Reads a started codecarbon tracker's CPU hardware object."""
  for device in getattr(tracker, '_hardware', None) or []:
    if isinstance(device, cc_hardware.CPU):
      mode = device._mode  # pylint: disable=protected-access
      tdp = device._tdp if mode in _TDP_MODES else None  # pylint: disable=protected-access
      return PowerSource(_MODE_NAMES.get(mode, mode),
                         None if tdp is None else float(tdp))
    if getattr(device, 'chip_part', None) == 'CPU':  # Apple silicon, Raspberry Pi
      return PowerSource(type(device).__name__, None)
  return PowerSource(UNAVAILABLE, None)

"""Per-node CPU seconds, so a host's energy can be split by node type.

codecarbon measures (or models) a whole machine; it cannot tell the learner's
share from the actors'. Each node process writes its own CPU seconds to
`run_dir/node_cpu/<node_name>.json`, and `split_energy_by_node_type` shares the
host energy out in proportion. That split is an attribution model, not a
measurement: it assumes every CPU second costs the same energy, and it hands
idle power, RAM and GPU energy to nodes by their CPU time too.
"""
import atexit
import collections
import json
import os
import re
import resource
import socket
import tempfile
from typing import Dict, Mapping, Optional

from quarl.carbon.periodic import PeriodicCall

NODE_CPU_DIR = 'node_cpu'

_NODE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*')
_INDEX_SUFFIX = re.compile(r'_\d+$')


def process_cpu_seconds() -> float:
  """User + system CPU seconds of this process, all its threads included."""
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def _earlier_cpu_seconds(path: str) -> float:
  """What the node's earlier processes (before a restart or a resume) used,
  from its file: a new process's CPU counter starts again from zero."""
  try:
    with open(path) as f:
      payload = json.load(f)
  except (FileNotFoundError, ValueError):
    return 0.0
  if (payload.get('pid'), payload.get('host')) == (os.getpid(),
                                                   socket.gethostname()):
    # This process recorded it (a second run in one process): its own
    # seconds are counted again from process start.
    return float(payload.get('earlier_cpu_seconds', 0.0))
  return float(payload['cpu_seconds'])


class NodeCpuRecorder:
  """Writes the node's CPU seconds, atomically: those of this process plus
  those its earlier processes recorded in the same file.

  It records on `record()`, at interpreter exit, and every `record_every_s`
  seconds if given: SIGTERM/SIGKILL skip exit hooks, so long-lived nodes
  should record periodically to leave a figure behind when killed.
  """

  def __init__(self, run_dir: str, node_name: str,
               record_every_s: Optional[float] = None):
    if not _NODE_NAME.fullmatch(node_name):
      raise ValueError(f'node name {node_name!r} is not a safe file name')
    self._dir = os.path.join(run_dir, NODE_CPU_DIR)
    self._path = os.path.join(self._dir, f'{node_name}.json')
    os.makedirs(self._dir, exist_ok=True)
    self._earlier = _earlier_cpu_seconds(self._path)
    atexit.register(self.record)
    self._periodic = None
    if record_every_s is not None:
      self._periodic = PeriodicCall(self.record, record_every_s,
                                    f'node-cpu-{node_name}')
      self._periodic.start()

  def record(self) -> float:
    """Writes and returns the node's CPU seconds so far."""
    seconds = self._earlier + process_cpu_seconds()
    payload = {'cpu_seconds': seconds, 'earlier_cpu_seconds': self._earlier,
               'pid': os.getpid(), 'host': socket.gethostname()}
    fd, tmp_path = tempfile.mkstemp(dir=self._dir, suffix='.tmp')
    try:
      with os.fdopen(fd, 'w') as f:
        json.dump(payload, f)
      os.replace(tmp_path, self._path)  # readers never see a half-written file
    except BaseException:
      os.unlink(tmp_path)
      raise
    return seconds

  def close(self) -> float:
    """Final record; stops the periodic thread and the exit hook."""
    if self._periodic is not None:
      self._periodic.stop()
    atexit.unregister(self.record)
    return self.record()


def read_node_cpu_seconds(run_dir: str) -> Dict[str, float]:
  """Node name -> CPU seconds, from every node that recorded in `run_dir`."""
  node_dir = os.path.join(run_dir, NODE_CPU_DIR)
  if not os.path.isdir(node_dir):
    return {}
  seconds = {}
  for file_name in sorted(os.listdir(node_dir)):
    if file_name.endswith('.json'):
      with open(os.path.join(node_dir, file_name)) as f:
        seconds[file_name[:-len('.json')]] = float(json.load(f)['cpu_seconds'])
  return seconds


def node_type(node_name: str) -> str:
  """'actor_3' -> 'actor'; names without a trailing index are their own type."""
  return _INDEX_SUFFIX.sub('', node_name)


def split_energy_by_node_type(cpu_seconds: Mapping[str, float],
                              energy_kwh: float) -> Dict[str, float]:
  """Shares `energy_kwh` out by CPU seconds per node type (attribution model).

  With no CPU time recorded there is no basis to attribute anything, so every
  type gets 0.0 rather than an invented share.
  """
  if energy_kwh < 0:
    raise ValueError(f'energy_kwh must be non-negative, got {energy_kwh}')
  by_type = collections.defaultdict(float)
  for name, seconds in cpu_seconds.items():
    if seconds < 0:
      raise ValueError(f'negative CPU seconds for {name}: {seconds}')
    by_type[node_type(name)] += seconds
  total = sum(by_type.values())
  if total == 0:
    return {kind: 0.0 for kind in by_type}
  return {kind: energy_kwh * seconds / total for kind, seconds in by_type.items()}

"""The resolved settings of one run: a plain object the nodes receive."""
import dataclasses
import math
from typing import Any, Optional

ACTOR_PRECISIONS = ('fp32_tf', 'fp32', 'fp16', 'dynamic_int8', 'int8')


@dataclasses.dataclass(frozen=True)
class PublishPeriod:
  """Publish every `value` learner steps, or every `value` seconds."""
  value: float
  unit: str  # 'steps' or 'seconds'

  @classmethod
  def parse(cls, text: str) -> 'PublishPeriod':
    """'500' -> 500 learner steps; '5s' -> 5 seconds."""
    text = str(text).strip()
    unit = 'seconds' if text.endswith('s') else 'steps'
    try:
      value = float(text[:-1] if unit == 'seconds' else text)
    except ValueError:
      value = -1.0
    if not 0 < value < math.inf:  # nan and inf too: never publish.
      raise ValueError(
          f'--publish_period={text!r}: want a positive number of learner '
          'steps (e.g. 500) or seconds with an s suffix (e.g. 5s)')
    return cls(value, unit)


COMPRESSION_KINDS = ('none', 'gst', 'prune')


@dataclasses.dataclass(frozen=True)
class CompressionConfig:
  """Knobs of the learner-side compression controller (quarl.compression).

  Names match quarl.compression.make_controller; knobs a kind does not use
  are ignored by it (e.g. block_size for 'prune' sets the mask group size).
  """
  kind: str = 'none'
  block_size: int = 4
  s_shift: float = 1.0
  # GST block-size ladder (quarl.compression.controller.TRANSFORMS) or none.
  transform: str = 'none'
  s_init: float = 0.0
  s_final: float = 0.9
  begin_step: int = 0
  end_step: int = 20_000
  reward_window: int = 5
  reward_delta: float = 0.1
  step_back: float = 0.05
  patience: int = 3
  # GST's pause band is measured from this return (quarl RewardAwareClock);
  # None: the launcher measures the random policy's (launch/baselines.py).
  reward_reference: Optional[float] = None
  granularity: str = 'block'
  update_every: int = 100
  # compression.csv gets a row every `log_every` learner steps.
  log_every: int = 100

  def controller_knobs(self):
    knobs = dataclasses.asdict(self)
    for launcher_only in ('kind', 'log_every'):
      del knobs[launcher_only]
    return knobs


@dataclasses.dataclass(frozen=True)
class RunConfig:
  agent: str
  env: str
  actor_precision: str
  num_actors: int
  run_dir: str
  seed: int = 0
  max_seconds: float = 180.0
  max_actor_steps: Optional[int] = None
  publish_period: PublishPeriod = PublishPeriod(5.0, 'seconds')
  eval_episodes: int = 1
  # Evaluate every N learner steps (0: every 10 wall-clock seconds).
  eval_every: int = 0
  # Also evaluate the fp32 TF policy next to the quantized one (reward parity).
  eval_fp32: bool = False
  # Publish zero-heavy (GST/pruned) policies in TFLite's sparse format.
  publish_sparse: bool = False
  # local_mp, local_mt, or hosts (placed by the hosts file; launch/hosts.py).
  launch_type: str = 'local_mp'
  hosts_file: Optional[str] = None
  # Restarts of each actor, evaluator or quantizer that dies.
  max_restarts: int = 3
  # A quantizer without a heartbeat for this long is restarted as stalled.
  stall_timeout_s: float = 120.0
  # How the learner's step compiles: 'xla' (jit_compile) or 'graph'.
  learner_compile: str = 'xla'
  # Give the learner cores of its own (launch/nodes/threads.py).
  pin_cpus: bool = False
  # Requested network: auto, isolated or host (launch/network.py).
  network: str = 'auto'
  resume: bool = False
  agent_config: Any = None
  compression: CompressionConfig = CompressionConfig()
  # codecarbon's grid carbon intensity for this country (offline data).
  country_iso_code: str = 'USA'
  # time.time() when the launcher started; nodes report wall time from it.
  start_time: float = 0.0

  @property
  def quantized(self) -> bool:
    return self.actor_precision != 'fp32_tf'

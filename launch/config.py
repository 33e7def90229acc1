"""The resolved settings of one run: a plain object the nodes receive."""
import dataclasses
import math
from typing import Any, Optional, Tuple

from quarl.compression.config import CompressionConfig
from quarl.settings import setting

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

  def text(self) -> str:
    """As a user types it: '500' or '5s'."""
    value = f'{self.value:g}'
    return value + 's' if self.unit == 'seconds' else value


@dataclasses.dataclass(frozen=True)
class ResumePoint:
  """What a resume restores, chosen by the launcher before any node starts
  (launch/runtime/saved_state.py): the newest learner checkpoint that
  restores, the counts saved with it, and how much of the replay goes
  with it."""
  learner_checkpoint: str  # 'ckpt-N' under checkpoints/learner.
  newest_checkpoint: str  # The newest on disk (the same, unless damaged).
  counts: Tuple[Tuple[str, float], ...]
  counts_from: str  # The file they were read from.
  replay: str  # 'full', 'partly' (another save's) or 'none'.
  replay_checkpoint: Optional[str]  # Relative to run_dir.
  set_aside: Tuple[Tuple[str, str], ...]  # (damaged file, why) moved aside.


LAUNCH_TYPES = ('local_mp', 'local_mt', 'ray')
NODE_STARTS = ('fork', 'exec')
# Hyper-parameter presets every agent's config_for_env understands.
PRESETS = ('small', 'paper')


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """One run's settings; `launch.train`'s flags are these fields'."""
  agent: str = setting('d4pg', 'a2c, d4pg, dqn, ppo or td3')
  env: str = setting(
      'gym:Pendulum-v1', 'dm_control:DOMAIN:TASK, gym:ID, gymnasium:ID '
      '(MuJoCo v5 tasks), ale:GAME (Atari 2600) or football:SCENARIO '
      '(Google Research Football, after `make football`)')
  actor_precision: str = setting(
      'int8', f'{", ".join(ACTOR_PRECISIONS)}: fp32_tf is the stock Acme TF '
      'actor (the baseline); the others are TFLite models run by LiteRT')
  num_actors: int = setting(
      2, 'Actor processes; actor i gets its own exploration sigma '
      '(D4PG/TD3) or epsilon (DQN). At most 4 per core this process may '
      'use, and one per 256 MiB of memory besides the run\'s other 5 nodes '
      '(on 2 cores: 8), unless --oversubscribe; not checked with '
      '--launch_type=ray')
  oversubscribe: bool = setting(
      False, 'Start more actors than --num_actors\'s rule allows this '
      'machine (they will share cores and memory)')
  run_dir: Optional[str] = setting(None, 'Where the run writes (required)')
  seed: int = setting(0, 'Seed for TF, envs and exploration')
  max_seconds: float = setting(
      180.0, 'Wall-clock budget over the whole run (resumes included)')
  max_actor_steps: Optional[int] = setting(
      None, 'Env-step budget over all actors (unset: none)')
  publish_period: PublishPeriod = setting(
      PublishPeriod(5.0, 'seconds'), 'Quantize + publish every N learner '
      'steps (e.g. 500) or seconds (5s)')
  # 3: one episode's return is too noisy for GST's reward-aware clock and
  # for "best return"; three cost ~1 s on Pendulum.
  eval_episodes: int = setting(3, 'Episodes per evaluation')
  eval_every: int = setting(
      0, 'Evaluate every N learner steps (the evaluator waits for the '
      'learner), so GST\'s clock sees returns at the same learner steps on '
      'any machine; 0: every 10 wall-clock seconds')
  eval_fp32: bool = setting(
      False, 'Also evaluate the learner\'s fp32 policy next to the quantized '
      'one (evaluator.csv fp32_return): reward parity')
  publish_sparse: bool = setting(
      False, 'Ship zero-heavy (GST/pruned) policies in TFLite\'s sparse '
      'format: a sparse int8 model (smaller publishes; actors run sparse '
      'layers on builtin kernels, slower than XNNPACK)')
  launch_type: str = setting(
      'local_mp', f'{", ".join(LAUNCH_TYPES)}: processes on this machine, '
      'threads of one process (no restarts), or processes on the machines '
      'of a Ray cluster (--ray_address)')
  ray_address: Optional[str] = setting(
      None, 'With --launch_type=ray: HOST:PORT of the Ray cluster\'s head '
      '(unset: $RAY_ADDRESS). Its machines must share a private network, '
      'the repository and .venv paths, and the run directory; a machine '
      'started with Ray resource quarl_GROUP (e.g. quarl_actor) may run '
      'that group\'s nodes')
  max_restarts: int = setting(
      3, 'Restarts of each actor, evaluator or quantizer that dies, before '
      'the run stops as failed')
  stall_timeout_s: float = setting(
      120.0, 'A node silent this long (its CPU record not re-stamped; a '
      'quantizer: no publish, no heartbeat) is stalled: restarted, or the '
      'run fails for the learner, replay and counter')
  learner_compile: str = setting(
      'auto', 'auto, xla or graph: the learner step as one XLA-compiled '
      'update (jit_compile) or a plain TF graph; auto: a graph for pixel '
      'observations (XLA computes convolution gradients slowly on CPU), XLA '
      'for flat vectors')
  pin_cpus: bool = setting(
      False, 'Pin the learner (with the replay server) to cores of its own '
      'and the other nodes to the rest (2 or more cores; on 2, one core '
      'each)')
  node_start: str = setting(
      'fork', 'fork or exec: each node process forked from one interpreter '
      'per host that has already imported TensorFlow, Reverb and Acme '
      '(start-up paid once), or started as an interpreter of its own')
  network: str = setting(
      'auto', 'auto, isolated or host: a private network namespace (only '
      'loopback), or host networking; auto and isolated refuse to start '
      'where the machine allows no namespace, host is the explicit opt-out; '
      'with --launch_type=ray, auto is the cluster\'s network')
  resume: bool = setting(
      False, 'Continue the run in --run_dir where it stopped (learner, '
      'replay, counts, wall time, GST state, quantizer epoch); the settings '
      'that define the run (agent, env, seed, compression, ...) must match '
      'its config.json')
  preset: str = setting(
      'small', f'{", ".join(PRESETS)}: agent hyper-parameters sized for a '
      '2-core machine, or the paper\'s (ActorQ: 3x2048 policy); '
      '--AGENT.FIELD flags override it')
  overwrite: bool = setting(
      False, 'Empty --run_dir first; only a directory a previous run made, '
      'and never one a live run holds')
  country_iso_code: str = setting(
      'USA', 'Grid carbon intensity used for CO2 (codecarbon offline data, '
      'ISO 3166 alpha-3)')
  agent_config: Any = setting(None, 'The agent\'s config', flag=False)
  compression: CompressionConfig = setting(
      CompressionConfig(), 'The compression knobs (--compression.*)',
      flag=False)
  resume_point: Optional[ResumePoint] = setting(
      None, 'What --resume restores (chosen by the launcher)', flag=False)
  # time.time() when the run began (launch/runtime/runner.py sets it, and
  # only it); nodes report wall time from it.
  start_time: float = setting(0.0, 'Launch time (set by the launcher)',
                              flag=False)

  @property
  def quantized(self) -> bool:
    return self.actor_precision != 'fp32_tf'

r"""Train one agent with quantized (ActorQ) actors on Launchpad.

Example (3-minute D4PG with int8 LiteRT actors on Pendulum):

  python -m launch.train --agent=d4pg --env=gym:Pendulum-v1 \
      --actor_precision=int8 --num_actors=2 --max_seconds=180 \
      --run_dir=runs/pendulum_int8

Exit codes: 0 budget reached; 1 a node failed; 2 bad input (nothing started);
130 interrupted (Ctrl-C). summary.json is written in every case but 2.
"""
import sys

from absl import flags

from agents import AGENT_NAMES
from launch import cli
from launch import compression_flags
from launch import network
from launch import resume
from launch import run_dir as run_dir_lib
from launch import runner
from launch.config import ACTOR_PRECISIONS
from launch.config import CompressionConfig

flags.adopt_module_key_flags(compression_flags)  # In --help.
_AGENT = flags.DEFINE_string('agent', 'd4pg', f'One of {AGENT_NAMES}.')
_ENV = flags.DEFINE_string(
    'env', 'gym:Pendulum-v1', 'dm_control:DOMAIN:TASK or gym:ID.')
_PRECISION = flags.DEFINE_string(
    'actor_precision', 'int8',
    f'{ACTOR_PRECISIONS}: fp32_tf is the stock Acme TF actor (the baseline); '
    'the others are TFLite models run by LiteRT.')
_NUM_ACTORS = flags.DEFINE_integer('num_actors', 2, 'Actor processes.')
_PRESET = flags.DEFINE_string(
    'preset', 'small', f'{cli.PRESETS}: hyper-parameters sized for a small '
    'machine, or the paper\'s (ActorQ: 3x2048 policy). Flags below override.')
_POLICY_LAYERS = flags.DEFINE_string(
    'policy_layers', None, 'Hidden widths of the policy MLP (preset: '
    '256,256,256 small, 2048,2048,2048 paper).')
_CRITIC_LAYERS = flags.DEFINE_string(
    'critic_layers', None, 'Hidden widths of the critic MLP.')
_MAX_SECONDS = flags.DEFINE_float('max_seconds', 180.0, 'Wall-clock budget.')
_MAX_ACTOR_STEPS = flags.DEFINE_integer(
    'max_actor_steps', None, 'Env-step budget over all actors (optional).')
_PUBLISH_PERIOD = flags.DEFINE_string(
    'publish_period', '5s',
    'Quantize + publish every N learner steps (e.g. 500) or seconds (5s).')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed for TF, envs and exploration.')
_RUN_DIR = flags.DEFINE_string('run_dir', None, 'Where the run writes.')
_OVERWRITE = flags.DEFINE_bool(
    'overwrite', False, 'Empty --run_dir first; only a directory a previous '
    'run made, and never one a live run holds.')
_RESUME = flags.DEFINE_bool(
    'resume', False, 'Continue the run in --run_dir where it stopped: '
    'learner, replay contents, counts, wall time, GST state and quantizer '
    'epoch. Budgets (--max_seconds, --max_actor_steps) count the whole run; '
    'settings that make the run what it is (agent, env, precision, seed, '
    'actors, compression, hyper-parameters) must match its config.json.')
_EVAL_EPISODES = flags.DEFINE_integer('eval_episodes', 3,
                                      'Episodes per evaluation.')
_EVAL_EVERY = flags.DEFINE_integer(
    'eval_every', 0, 'Evaluate every N learner steps (the evaluator waits '
    'for the learner), so GST\'s reward-aware clock sees returns at the same '
    'learner steps on any machine; 0: every 10 wall-clock seconds.')
_EVAL_FP32 = flags.DEFINE_bool(
    'eval_fp32', False, 'Also evaluate the learner\'s fp32 policy next to the '
    'quantized one (evaluator.csv fp32_return): reward parity.')
_PUBLISH_SPARSE = flags.DEFINE_bool(
    'publish_sparse', False, 'Ship the policy in TFLite\'s sparse format: '
    'with --compression=gst|prune, a sparse int8 model (smaller publishes; '
    'actors run sparse layers on builtin kernels, slower than XNNPACK).')
_NETWORK = flags.DEFINE_string(
    'network', 'auto', f'{network.MODES}: run in a private network namespace '
    '(only loopback; nothing reachable from outside), or on host networking. '
    'auto and isolated refuse to start where the machine allows no '
    'namespace; host is the explicit opt-out. With --launch_type=hosts, auto '
    'is the hosts\' shared network and isolated is refused.')
_LAUNCH_TYPE = flags.DEFINE_string(
    'launch_type', 'local_mp', f'{cli.LAUNCH_TYPES}: processes on this '
    'machine, threads of one process (no restarts), or processes on the '
    'machines of --hosts.')
_HOSTS = flags.DEFINE_string(
    'hosts', None, 'With --launch_type=hosts: a YAML or JSON file placing '
    'each node group on a host (address + command prefix such as ssh HOST); '
    'hosts must share a private network and the run directory.')
_MAX_RESTARTS = flags.DEFINE_integer(
    'max_restarts', 3, 'Restarts of each actor, evaluator or quantizer that '
    'dies, before the run stops as failed.')
_STALL_TIMEOUT = flags.DEFINE_float(
    'stall_timeout_s', 120.0, 'A quantizer silent this long (no publish, no '
    'heartbeat) is restarted as stalled; past --max_restarts the run fails.')
_LEARNER_COMPILE = flags.DEFINE_string(
    'learner_compile', 'xla', f'{cli.COMPILE_MODES}: the learner step as one '
    'XLA-compiled update (jit_compile) or a plain TF graph.')
_PIN_CPUS = flags.DEFINE_bool(
    'pin_cpus', False, 'Pin the learner to cores of its own and the other '
    'nodes to the rest (with 2 or more cores; on 2, one core each).')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', None, 'Learner batch size.')
_SAMPLES_PER_INSERT = flags.DEFINE_float(
    'samples_per_insert', None, 'Replay rate limit: samples per insert.')
_MAX_TIMES_SAMPLED = flags.DEFINE_integer(
    'max_times_sampled', None, "ActorQ's replay regime: actors are never "
    'throttled and each transition is sampled at most N times (the authors '
    'ran 16); replaces --samples_per_insert. 0: the agent\'s replay ratio.')
_MIN_REPLAY_SIZE = flags.DEFINE_integer('min_replay_size', None,
                                        'Transitions before learning starts.')
_VMIN = flags.DEFINE_float('vmin', None, 'D4PG critic support minimum.')
_VMAX = flags.DEFINE_float('vmax', None, 'D4PG critic support maximum.')
_POLICY_LAYER_NORM = flags.DEFINE_bool(
    'policy_layer_norm', None, "D4PG: Acme's LayerNorm + tanh after the "
    "policy torso's input layer (default on). Off makes int8 actors ~2x "
    'faster at 3x256 (benchmarks/actor_inference.py).')
_COUNTRY = flags.DEFINE_string(
    'country_iso_code', 'USA', 'Grid carbon intensity used for CO2 '
    '(codecarbon offline data, ISO 3166 alpha-3).')
_Q_LAYERS = flags.DEFINE_string('q_layers', None,
                                'DQN Q-network hidden widths (e.g. 256,256).')

def config_from_flags():
  overrides = dict(
      policy_layers=_layers_or_none('policy_layers', _POLICY_LAYERS.value),
      critic_layers=_layers_or_none('critic_layers', _CRITIC_LAYERS.value),
      batch_size=_BATCH_SIZE.value,
      samples_per_insert=_SAMPLES_PER_INSERT.value,
      max_times_sampled=_MAX_TIMES_SAMPLED.value,
      min_replay_size=_MIN_REPLAY_SIZE.value,
      vmin=_VMIN.value, vmax=_VMAX.value,
      policy_layer_norm=_POLICY_LAYER_NORM.value,
      q_layers=_layers_or_none('q_layers', _Q_LAYERS.value))
  defaults = CompressionConfig()
  compression = compression_flags.compression_config(defaults.begin_step,
                                                     defaults.end_step)
  return cli.make_run_config(
      agent=_AGENT.value, env=_ENV.value, actor_precision=_PRECISION.value,
      num_actors=_NUM_ACTORS.value, run_dir=_RUN_DIR.value,
      seed=_SEED.value, max_seconds=_MAX_SECONDS.value,
      max_actor_steps=_MAX_ACTOR_STEPS.value,
      publish_period=_PUBLISH_PERIOD.value,
      eval_episodes=_EVAL_EPISODES.value, eval_every=_EVAL_EVERY.value,
      eval_fp32=_EVAL_FP32.value,
      publish_sparse=_PUBLISH_SPARSE.value,
      launch_type=_LAUNCH_TYPE.value, learner_compile=_LEARNER_COMPILE.value,
      pin_cpus=_PIN_CPUS.value, network=_NETWORK.value,
      agent_overrides=overrides, compression=compression,
      country_iso_code=_COUNTRY.value, preset=_PRESET.value,
      resume=_RESUME.value, hosts_file=_HOSTS.value,
      max_restarts=_MAX_RESTARTS.value,
      stall_timeout_s=_STALL_TIMEOUT.value)


def _layers_or_none(flag: str, text):
  return None if text is None else cli.parse_layers(flag, text)


def main(argv):
  del argv  # run_main refuses positional arguments.
  try:
    config = config_from_flags()
    if config.resume:  # The same run, or nothing: before anything starts.
      config = resume.check(config.run_dir, config)
    if config.launch_type != 'hosts':  # Across hosts: a private network.
      network.enter(config.network, sys.argv)  # Re-executes when isolating.
    # Locks run_dir for this process (the re-executed one, when isolating).
    run_dir_lib.prepare_run_dir(config.run_dir, _OVERWRITE.value,
                                _RESUME.value)
  except (cli.UsageError, run_dir_lib.RunDirError,
          network.IsolationError) as error:
    _usage_error(str(error))
  if network.current() == 'isolated':
    network.bring_up_loopback()
  summary, code = runner.run(config)
  print(runner.format_summary(summary), flush=True)
  print(f'run directory: {config.run_dir}', flush=True)
  sys.exit(code)


def _usage_error(message: str):
  cli.usage_exit('train', message)


def run_main():
  cli.run_main(main, 'train')


if __name__ == '__main__':
  run_main()

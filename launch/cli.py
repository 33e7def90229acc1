"""Turns command-line values into a RunConfig, or one clear usage error.

Kept apart from the absl flag definitions so every rule is testable without
parsing argv, and so other entry points (reproduce scripts, notebooks) build
configs the same way.
"""
import dataclasses
import functools
import math
import os
import sys
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from absl import app
from absl import flags

from agents import AGENT_NAMES
import agents
from agents import replay
from agents.compiled import AUTO_COMPILE_MODE
from agents.compiled import COMPILE_MODES
from launch.runtime import capacity
from launch.runtime.network import MODES as NETWORK_MODES
from launch.config import ACTOR_PRECISIONS
from quarl.compression.config import COMPRESSION_KINDS
from quarl.compression.config import CompressionConfig
from launch.config import LAUNCH_TYPES
from launch.config import NODE_STARTS
from launch.config import PRESETS
from launch.config import PublishPeriod
from launch.config import RunConfig
from quarl import compression as compression_lib
from quarl import envs
from quarl.settings import is_flag

# Every seed consumer takes it (gym and numpy want >= 0, ALE an int32).
MAX_SEED = 2**31 - 1


class UsageError(ValueError):
  """Bad command-line input: printed as one line, exit code 2."""


def usage_exit(prog: str, message: str) -> None:
  print(f'{prog}: error: {message}', file=sys.stderr, flush=True)
  sys.exit(2)


def run_main(main: Callable, prog: str) -> None:
  """absl's app.run for every entry point, where an unknown flag or an
  unparsable value is one `PROG: error:` line and exit 2 (absl's own report
  is a FATAL banner and exit 1), and help exits 0."""
  app.run(main, flags_parser=functools.partial(_parse_flags, prog))


def _parse_flags(prog: str, argv):
  try:
    rest = flags.FLAGS(argv)
  except flags.Error as error:
    usage_exit(prog, str(error).splitlines()[0])
  except SystemExit as done:
    # absl's --help* flags print usage, then exit 1 mid-parse: not an error.
    sys.exit(0 if done.code == 1 else done.code)
  if len(rest) > 1:
    usage_exit(prog, f'unexpected arguments: {" ".join(rest[1:])}')
  return rest


def finite_positive(value) -> bool:
  """An absl validator for numeric flags: nan, inf and <= 0 are refused."""
  return value is not None and 0 < value < math.inf


def require_positive(*names: str) -> None:
  """Absl validators: each named flag must be a finite number > 0 (an
  entry point's bad value is then one line and exit 2, via run_main)."""
  for name in names:
    flags.register_validator(name, finite_positive,
                             'must be a finite number > 0')


def widths_or_empty(text: str) -> bool:
  """An absl validator: comma-separated positive widths, or '' for none."""
  try:
    return not text or bool(parse_layers('widths', text))
  except UsageError:
    return False


def _choice(flag: str, value: str, choices: Sequence[str]) -> str:
  if value not in choices:
    raise UsageError(f'--{flag}={value!r} is not valid; choose from: '
                     f'{", ".join(choices)}')
  return value


def _positive(flag: str, value, allow_none: bool = False):
  """A number > 0 and finite: nan passes a plain `<= 0` test, and an inf
  budget or ratio never ends or never holds."""
  if value is None and allow_none:
    return None
  if value is None or math.isnan(value) or value <= 0:
    raise UsageError(f'--{flag}={value} must be > 0')
  if math.isinf(value):
    raise UsageError(f'--{flag}={value} must be finite')
  return value


def _check_overrides(agent: str, overrides: Dict[str, Any]) -> None:
  """Replay and critic knobs that would only fail (or never end) later."""
  for field in ('batch_size', 'min_replay_size', 'samples_per_insert'):
    _positive(f'{agent}.{field}', overrides.get(field), allow_none=True)
  max_times_sampled = overrides.get('max_times_sampled')
  if max_times_sampled is not None and max_times_sampled < 0:
    raise UsageError(f'--{agent}.max_times_sampled={max_times_sampled} must '
                     'be >= 0 (0: no limit)')
  if max_times_sampled and overrides.get('samples_per_insert') is not None:
    raise UsageError(f'--{agent}.samples_per_insert and '
                     f'--{agent}.max_times_sampled are two replay regimes (a '
                     'throttled replay ratio, or free actors with a per-item '
                     'sample limit): give one')
  for field in ('vmin', 'vmax'):
    value = overrides.get(field)
    if value is not None and not math.isfinite(value):
      raise UsageError(f'--{agent}.{field}={value} must be finite')


def _check_agent_config(agent_config) -> None:
  """What the agent will build from its config, built now: a D4PG support
  with vmin < vmax, and the learner table's Reverb rate limiter (the one
  the replay node would make, so its refusal is not a replay.log line), and
  PPO minibatches that split a batch's steps evenly."""
  minibatches = getattr(agent_config, 'num_minibatches', None)
  if minibatches is not None:
    steps = agent_config.batch_size * agent_config.unroll_length
    if minibatches < 1 or steps % minibatches:
      raise UsageError(
          f'num_minibatches={minibatches} must divide a batch\'s {steps} '
          f'steps (batch_size={agent_config.batch_size} x '
          f'unroll_length={agent_config.unroll_length})')
  vmin, vmax = (getattr(agent_config, 'vmin', None),
                getattr(agent_config, 'vmax', None))
  if vmin is not None and vmin >= vmax:
    raise UsageError(f'vmin={vmin} must be below vmax={vmax}')
  if hasattr(agent_config, 'min_replay_size'):
    spi = getattr(agent_config, 'samples_per_insert', None)
    try:
      replay.rate_limiter(agent_config.min_replay_size, spi)
    except ValueError as error:
      raise UsageError(
          f'min_replay_size={agent_config.min_replay_size} with '
          f'samples_per_insert={spi}: Reverb refuses the rate limiter: '
          f'{str(error).splitlines()[0]}') from error


def _country(code: str) -> str:
  from codecarbon.input import DataSource  # pylint: disable=g-import-not-at-top
  known = DataSource().get_global_energy_mix_data()
  if code not in known:
    raise UsageError(f'--country_iso_code={code!r} has no offline energy-mix '
                     f'data; e.g. USA, FRA, DEU, GBR, CAN, IND, CHN')
  return code


def parse_layers(flag: str, text: str) -> tuple:
  try:
    layers = tuple(int(x) for x in str(text).split(',') if x.strip())
  except ValueError:
    layers = ()
  if not layers or min(layers) <= 0:
    raise UsageError(f'--{flag}={text!r}: want comma-separated positive '
                     'layer widths, e.g. 256,256,256')
  return layers


def make_agent_config(agent: str, env: str, overrides: Dict[str, Any],
                      preset: str = 'small'):
  """The agent's `preset` config for `env`, `overrides` (its fields) set.

  Raises:
    UsageError: an override the agent's config has no field for.
  """
  _, config_for_env = agents.lookup(agent)
  names = {f.name for f in dataclasses.fields(agents.config_class(agent))}
  unknown = sorted(set(overrides) - names)
  if unknown:
    raise UsageError(f'{agent} has no setting {unknown[0]!r}')
  config = config_for_env(env, preset=preset, **overrides)
  if getattr(config, 'max_times_sampled', 0):
    # The authors' regime (agents/replay.py ReplayRegime): no replay ratio.
    config = dataclasses.replace(config, samples_per_insert=None)
  return config


def resolve(values: Mapping[str, Any]) -> RunConfig:
  """The RunConfig of launch.train's settings by flag name (as the flags
  give them, or as a sweep sets an arm's: `seed`, `compression.kind`,
  `td3.batch_size`), every value validated: one path from flags and from
  sweeps, which hand the result to launch.train as data.

  Raises:
    UsageError: naming the first bad or unknown setting.
  """
  agent = values.get('agent', RunConfig.agent)
  fields, compression, overrides = {}, {}, {}
  for name, value in values.items():
    group, dotted, field = name.partition('.')
    if not dotted:
      fields[name] = value
    elif group == 'compression':
      compression[field] = value
    elif group == agent:
      overrides[field] = value
    elif group in AGENT_NAMES:
      raise UsageError(f'--{name} is a {group} setting, but --agent={agent}')
    else:
      raise UsageError(f'no setting --{name}')
  for known, given, prefix in ((RunConfig, fields, ''),
                               (CompressionConfig, compression,
                                'compression.')):
    names = {f.name for f in dataclasses.fields(known) if is_flag(f)}
    unknown = sorted(set(given) - names)
    if unknown:
      raise UsageError(f'no setting --{prefix}{unknown[0]}')
  return make_run_config(
      agent_overrides=overrides,
      compression=dataclasses.replace(CompressionConfig(), **compression),
      **fields)


def make_run_config(*, agent_overrides: Dict[str, Any] = None,
                    compression: CompressionConfig = CompressionConfig(),
                    **fields) -> RunConfig:
  """The RunConfig of `fields` (RunConfig's flag fields; the others keep
  the dataclass's defaults), the agent's preset config with
  `agent_overrides` and `compression`, every value validated.

  Raises:
    UsageError: naming the first bad value.
  """
  config = RunConfig(**fields)
  if config.launch_type == 'ray' and not config.ray_address:
    config = dataclasses.replace(config,
                                 ray_address=os.environ.get('RAY_ADDRESS'))
  _check_run(config)
  try:
    envs.validate_environment_name(config.env)
    period = (config.publish_period
              if isinstance(config.publish_period, PublishPeriod)
              else PublishPeriod.parse(config.publish_period))
  except ValueError as error:
    raise UsageError(str(error)) from error
  _check_compression(compression)
  overrides = dict(agent_overrides or {})
  _check_overrides(config.agent, overrides)
  agent_config = make_agent_config(config.agent, config.env, overrides,
                                   config.preset)
  if (config.launch_type == 'local_mt' and
      hasattr(agent_config, 'samples_per_insert')):
    # A thread blocked in a rate-limited Reverb call cannot be stopped, so
    # threaded runs use a min-size limiter only (replay ratio uncontrolled).
    agent_config = dataclasses.replace(agent_config, samples_per_insert=None)
  _check_agent_config(agent_config)
  observations = _check_env_fits_agent(config)
  if (compression_lib.needs_gradients(compression.kind) and
      not agents.lookup(config.agent)[0].records_gradients):
    raise UsageError(
        f'--compression.kind={compression.kind} reads the learner\'s dense '
        f'gradients, which --agent={config.agent}\'s learner does not hand '
        'over; agents that do: ' + ', '.join(
            name for name in AGENT_NAMES
            if agents.lookup(name)[0].records_gradients))
  return dataclasses.replace(
      config, publish_period=period,
      # A quoted ~ reaches us unexpanded; it means the home directory.
      run_dir=os.path.expanduser(config.run_dir),
      agent_config=agent_config, compression=compression,
      country_iso_code=_country(config.country_iso_code),
      learner_compile=AUTO_COMPILE_MODE[observations]
      if config.learner_compile == 'auto' else config.learner_compile)


def _check_run(config: RunConfig) -> None:
  """RunConfig's own fields, each alone or with the field it goes with."""
  _choice('agent', config.agent, AGENT_NAMES)
  _choice('actor_precision', config.actor_precision, ACTOR_PRECISIONS)
  _choice('launch_type', config.launch_type, LAUNCH_TYPES)
  _choice('learner_compile', config.learner_compile,
          ('auto',) + COMPILE_MODES)
  _choice('network', config.network, NETWORK_MODES)
  _choice('node_start', config.node_start, NODE_STARTS)
  _choice('preset', config.preset, PRESETS)
  if config.network == 'isolated' and config.launch_type == 'ray':
    raise UsageError('--network=isolated cannot go with --launch_type=ray: '
                     'nodes on other machines need the cluster\'s network '
                     '(the default --network=auto uses it)')
  _positive('num_actors', config.num_actors)
  if config.launch_type != 'ray' and not config.oversubscribe:
    too_many = capacity.refusal(config.num_actors)
    if too_many:
      raise UsageError(too_many)
  _positive('max_seconds', config.max_seconds)
  if not 0 <= config.seed <= MAX_SEED:
    raise UsageError(f'--seed={config.seed}: want an integer in '
                     f'[0, {MAX_SEED}]')
  _positive('max_actor_steps', config.max_actor_steps, allow_none=True)
  _positive('eval_episodes', config.eval_episodes)
  if config.eval_every < 0:
    raise UsageError(f'--eval_every={config.eval_every} must be >= 0')
  if config.max_restarts < 0:
    raise UsageError(f'--max_restarts={config.max_restarts}: want 0 or more')
  _positive('stall_timeout_s', config.stall_timeout_s)
  if config.ray_address and config.launch_type != 'ray':
    raise UsageError('--ray_address goes with --launch_type=ray only')
  if config.launch_type == 'ray':
    _check_ray_address(config.ray_address)
  if not config.run_dir:
    raise UsageError('--run_dir is required')


def _check_ray_address(address: Optional[str]) -> None:
  """HOST:PORT of a cluster's head, which the runner dials to join it."""
  if not address:
    raise UsageError('--launch_type=ray needs the cluster: --ray_address='
                     'HOST:PORT or $RAY_ADDRESS')
  host, _, port = address.rpartition(':')
  if not host.strip('[]') or not port.isdigit() or not 0 < int(port) < 65536:
    raise UsageError(f'--ray_address={address}: want HOST:PORT of the Ray '
                     'cluster\'s head (ray start --head prints it)')


def _check_compression(compression: CompressionConfig) -> None:
  """The checks the learner's controller will apply, before anything
  starts."""
  _choice('compression.kind', compression.kind, COMPRESSION_KINDS)
  try:
    compression_lib.make_controller(compression.kind, [],
                                    **compression.controller_knobs())
  except ValueError as error:
    raise UsageError(str(error)) from error


def _check_env_fits_agent(config: RunConfig) -> str:
  """The env builds, with the action and observation kinds the agent
  takes; returns its observation kind."""
  agent_class, _ = agents.lookup(config.agent)
  try:
    environment = envs.make_environment(config.env, config.seed)
  except envs.EnvironmentBuildError as error:
    raise UsageError(str(error)) from error
  try:
    return _check_kinds(config, agent_class, environment)
  finally:
    environment.close()  # Football's runs in a child process.


def _check_kinds(config: RunConfig, agent_class, environment) -> str:
  kind = envs.action_kind(environment)
  if kind != agent_class.action_kind:
    raise UsageError(
        f'--env={config.env} has {kind} actions but --agent={config.agent} '
        f'needs {agent_class.action_kind} actions')
  observations = envs.observation_kind(environment)
  if observations not in agent_class.observation_kinds:
    raise UsageError(
        f'--env={config.env} has {observations} observations but '
        f'--agent={config.agent} needs '
        f'{" or ".join(agent_class.observation_kinds)} observations')
  return observations

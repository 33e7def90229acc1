r"""Command-line flags generated from the config dataclasses.

`define(cls, prefix)` makes one absl flag per field of `cls`, named prefix +
field name (no renames): RunConfig's `--num_actors`, CompressionConfig's
`--compression.block_size`, each agent's `--td3.batch_size`. The field's
type, default and help (quarl/settings.py) are the flag's. `Group.given()`
returns only the values typed on the command line, so every other setting
takes its default from the dataclass itself: defaults live there alone.

An agent's defaults depend on the env and the preset (its config_for_env),
so its flags default to "unset" and their help names the dataclass default.

The flag tables in docs/flags.md are written from these groups by
launch/flag_tables.py.
"""
import collections.abc
import dataclasses
import typing
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import flags

import agents
from launch import cli
from launch.config import PublishPeriod
from launch.config import RunConfig
from quarl.compression.config import CompressionConfig
from quarl import settings as quarl_settings

_DEFINE = {int: flags.DEFINE_integer, float: flags.DEFINE_float,
           str: flags.DEFINE_string, bool: flags.DEFINE_bool}
LAYERS = 'layers'  # Comma-separated MLP widths, e.g. 256,256.


def _flag_type(hint) -> Any:
  """int, float, str, bool, LAYERS or PublishPeriod for a field's hint."""
  if typing.get_origin(hint) is typing.Union:  # Optional[X] is X or unset.
    hint, = [arg for arg in typing.get_args(hint) if arg is not type(None)]
  if typing.get_origin(hint) in (tuple, list, collections.abc.Sequence):
    return LAYERS
  if hint in _DEFINE or hint is PublishPeriod:
    return hint
  raise TypeError(f'no flag type for {hint!r}')


def _text(value) -> str:
  """A default as a user would type it."""
  if value is None:
    return ''
  if isinstance(value, PublishPeriod):
    return value.text()
  if isinstance(value, bool):
    return 'true' if value else 'false'
  if isinstance(value, (tuple, list)):
    return ','.join(str(width) for width in value)
  return str(value)


@dataclasses.dataclass
class Group:
  """The flags of one dataclass."""
  cls: type
  prefix: str
  holders: Dict[str, Any]
  kinds: Dict[str, Any]

  def name(self, field: str) -> str:
    return self.prefix + field

  def given(self) -> Dict[str, Any]:
    """Field -> value for the flags typed on the command line.

    Raises:
      cli.UsageError: a layers flag that is not comma-separated widths.
    """
    values = {}
    for field, holder in self.holders.items():
      if not holder.present:
        continue
      value = holder.value
      if self.kinds[field] == LAYERS:
        value = cli.parse_layers(self.name(field), value)
      values[field] = value
    return values

  def rows(self) -> List[Tuple[str, str, str]]:
    """(flag, default, help) per flag, for the docs."""
    result = []
    for field in _flag_fields(self.cls):
      default = _text(_default(field))
      result.append((f'--{self.name(field.name)}', default,
                     quarl_settings.help_of(field)))
    return result


def _flag_fields(cls) -> List[dataclasses.Field]:
  return [field for field in dataclasses.fields(cls)
          if quarl_settings.is_flag(field)]


def _default(field: dataclasses.Field):
  if field.default is not dataclasses.MISSING:
    return field.default
  if field.default_factory is not dataclasses.MISSING:
    return field.default_factory()
  return None


def define(cls, prefix: str = '', unset_defaults: bool = False,
           flag_values=flags.FLAGS) -> Group:
  """One flag per flag field of dataclass `cls` (see the module doc)."""
  hints = typing.get_type_hints(cls)
  holders, kinds = {}, {}
  for field in _flag_fields(cls):
    kind = _flag_type(hints[field.name])
    help_text = quarl_settings.help_of(field)
    if not help_text:
      raise ValueError(f'{cls.__name__}.{field.name} has no help')
    default = None if unset_defaults else _default(field)
    if unset_defaults:
      shown = _text(_default(field)) or 'unset'
      help_text += f' (default: {shown}, or as the preset and env set it)'
    if kind in (LAYERS, PublishPeriod):
      definer, default = flags.DEFINE_string, (
          None if default is None else _text(default))
    else:
      definer = _DEFINE[kind]
    holders[field.name] = definer(prefix + field.name, default, help_text,
                                  flag_values=flag_values)
    kinds[field.name] = kind
  return Group(cls, prefix, holders, kinds)


@dataclasses.dataclass
class TrainFlags:
  """launch.train's flags: the run's (RunConfig), the compression knobs and
  every agent's hyper-parameters (--AGENT.FIELD)."""
  run: Group
  compression: Group
  agents: Dict[str, Group]

  def given(self) -> Dict[str, Any]:
    """Flag name -> typed value, for the flags typed on the command line:
    what cli.resolve turns into a RunConfig."""
    values = {}
    for group in (self.run, self.compression, *self.agents.values()):
      values.update({group.name(field): value
                     for field, value in group.given().items()})
    return values


def define_train(flag_values=flags.FLAGS,
                 compression: Optional[Group] = None) -> TrainFlags:
  """Defines launch.train's flags in `flag_values`; `compression` is the
  --compression.* group where another module already defined it there."""
  return TrainFlags(
      run=define(RunConfig, flag_values=flag_values),
      compression=compression or define(
          CompressionConfig, prefix='compression.', flag_values=flag_values),
      # Each agent's defaults depend on the env and preset: unset here.
      agents={name: define(agents.config_class(name), prefix=f'{name}.',
                           unset_defaults=True, flag_values=flag_values)
              for name in agents.AGENT_NAMES})


def parse_train_args(args: Sequence[str]) -> Dict[str, Any]:
  """launch.train flags a user gave a sweep as '--name=value' strings
  (e.g. reproduce_gst --train_args) -> {name: typed value}, parsed once by
  the flags launch.train defines; later ones win.

  Raises:
    cli.UsageError: an entry that is not a launch.train flag, or a value
      its flag does not parse.
  """
  flag_values = flags.FlagValues()
  train_flags = define_train(flag_values)
  for arg in args:
    if not arg.startswith('--'):
      raise cli.UsageError(f'{arg!r} is not a --flag=value')
  try:
    flag_values(['train_args', *args])
  except flags.Error as error:
    raise cli.UsageError(str(error).splitlines()[0]) from error
  return train_flags.given()


def to_argv(settings: Mapping[str, Any]) -> List[str]:
  """Flag name -> value, as the argv the generated flags parse; each name
  once, so a later override replaces a value instead of repeating a flag
  (launch.classify's sweep: a training script, not a Launchpad run)."""
  argv = []
  for name, value in settings.items():
    if isinstance(value, bool):
      argv.append(f'--{name}' if value else f'--no{name}')
    else:
      argv.append(f'--{name}={_text(value)}')
  return argv


def from_argv(args: Sequence[str]) -> Dict[str, str]:
  """'--name=value' (or '--name', '--noname') strings -> {name: value}, for
  settings users pass through a script's list flag; later ones win.

  Raises:
    ValueError: an entry that is not a flag.
  """
  result = {}
  for arg in args:
    if not arg.startswith('--'):
      raise ValueError(f'{arg!r} is not a --flag=value')
    name, has_value, value = arg[2:].partition('=')
    if has_value:
      result[name] = value
    elif name.startswith('no'):
      result[name[2:]] = False
    else:
      result[name] = True
  return result

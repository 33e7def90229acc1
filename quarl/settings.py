"""Settings that carry their own help.

The config dataclasses (launch/config.py, each agent's config.py) are the
one source of every setting's name, type, default and help: a field made by
`setting` keeps its help in the field's metadata, and launch/settings.py
makes the command-line flags and the docs' flag tables from the fields.
"""
import dataclasses
from typing import Any

HELP = 'help'
# False for fields a launcher fills in, never given on a command line.
FLAG = 'flag'


def setting(default: Any, help: str, *, flag: bool = True):  # pylint: disable=redefined-builtin
  """A dataclass field with `default` and the flag help `help`."""
  return dataclasses.field(default=default, metadata={HELP: help, FLAG: flag})


def help_of(field: dataclasses.Field) -> str:
  return field.metadata.get(HELP, '')


def is_flag(field: dataclasses.Field) -> bool:
  return field.metadata.get(FLAG, True)

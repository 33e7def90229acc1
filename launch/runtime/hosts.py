"""The hosts file: which machine runs which node group of a multi-host run.

    # Every host must reach every other on a private network.
    hosts:
      h1: {address: 10.213.0.1, prefix: "ip netns exec quarl-h1"}
      h2: {address: 10.213.0.2, prefix: "ssh -o BatchMode=yes worker2"}
    groups:
      replay: h1
      counter: h1
      learner: h1
      quantizer: h1
      evaluator: h1
      actor: [h1, h2]     # a list spreads the group's nodes round-robin

YAML (.yaml, .yml) or JSON (.json). `address` is what peers dial to reach
the nodes placed on that host; `prefix` is a command that starts a process
there (a string, split as a shell would, or a list of strings; absent or
empty: start it locally). Mistakes are caught here, before any node starts,
and reported in one line naming the file.
"""
import dataclasses
import ipaddress
import json
import os
import re
import shlex
from typing import Any, List, Mapping, Sequence, Tuple

import yaml

from launch import groups

GROUPS = groups.GROUPS

_HOSTNAME_LABEL = re.compile(r'^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$')


class HostsFileError(ValueError):
  """One-line message for the user (exit 2)."""


# What a shell leaves as it is (shlex.quote's safe set): a word through an
# ssh prefix is parsed again by the remote shell, so no other is sent.
_SHELL_SAFE = re.compile(r'^[\w@%+=:,./-]+$', re.ASCII)


def check_shell_safe(word: str, what: str) -> None:
  """Raises HostsFileError unless `word` reaches a remote shell unchanged."""
  if not _SHELL_SAFE.match(word):
    raise HostsFileError(
        f'{what} {word!r} would be parsed again by a remote shell (an ssh '
        'prefix): use only letters, digits and _@%+=:,./-')


@dataclasses.dataclass(frozen=True)
class Host:
  """Where a node runs and how its peers reach it."""
  name: str  # Label recorded in summary.json.
  address: str  # What peers dial to reach nodes on this host.
  prefix: Tuple[str, ...]  # Command prefix that starts a process there.


@dataclasses.dataclass(frozen=True)
class HostsPlan:
  """Placement of every node group the program has."""
  hosts: Mapping[str, Host]
  groups: Mapping[str, Tuple[str, ...]]  # Group -> host names.

  def host_for(self, group: str, index: int) -> Host:
    """Node `index` of `group`: round-robin over the group's hosts."""
    names = self.groups[group]
    return self.hosts[names[index % len(names)]]


def through_prefix(prefix: Sequence[str], cwd: str, env: Mapping[str, str],
                   command: Sequence[str]) -> List[str]:
  """`command` started through a host's prefix; a remote shell carries the
  environment and working directory along (`env -C DIR K=V ...`)."""
  if not prefix:
    return list(command)
  words = (['env', '-C', cwd] +
           [f'{key}={value}' for key, value in env.items()] + list(command))
  for word in words:
    check_shell_safe(word, 'a word of the node command')
  return list(prefix) + words


def local_plan(groups: Sequence[str] = GROUPS) -> HostsPlan:
  """Every group on this machine, started without a prefix."""
  host = Host('localhost', 'localhost', ())
  return HostsPlan({host.name: host}, {group: (host.name,) for group in groups})


def load(path: str, required_groups: Sequence[str]) -> HostsPlan:
  """Reads and checks a hosts file for a program with `required_groups`;
  groups of GROUPS the program lacks may appear in the file and are ignored.

  Raises:
    HostsFileError: the file is unusable; the message says why in one line.
  """
  def fail(problem: str) -> HostsFileError:
    return HostsFileError(f'hosts file {path}: ' +
                          ' '.join(problem.splitlines()))

  data = _parse(path, fail)
  if not isinstance(data, dict):
    raise fail('the top level must be a mapping with hosts and groups')
  for key in ('hosts', 'groups'):
    if not isinstance(data.get(key), dict) or not data[key]:
      raise fail(f'needs a non-empty mapping {key!r}')
  unknown = sorted(map(str, set(data) - {'hosts', 'groups'}))
  if unknown:
    raise fail(f'unknown key {unknown[0]!r} (only hosts and groups)')
  hosts = {}
  addresses = {}
  for name, entry in data['hosts'].items():
    host = _host(name, entry, fail)
    key = _address_key(host.address)
    if key in addresses:
      raise fail(f'duplicate address {host.address!r} (hosts '
                 f'{addresses[key]!r} and {name!r})')
    addresses[key] = name
    hosts[name] = host
  groups = {}
  for group, value in data['groups'].items():
    if group not in GROUPS:
      raise fail(f'unknown group {group!r} (groups: {", ".join(GROUPS)})')
    names = [] if value is None else [value] if isinstance(value, str) \
        else value
    if not isinstance(names, list) or not all(
        isinstance(name, str) for name in names):
      raise fail(f'group {group!r} must name a host or a list of hosts')
    for name in names:
      if name not in hosts:
        raise fail(f'group {group!r} names undefined host {name!r}')
    groups[group] = tuple(names)
  for group in required_groups:
    if not groups.get(group):
      raise fail(f'group {group!r} has no host')
  if len(hosts) > 1:
    for host in hosts.values():
      if _is_loopback(host.address):
        raise fail(f'host {host.name!r}: address {host.address!r} is '
                   'loopback; peers on the other hosts would dial themselves')
  return HostsPlan(hosts, {group: groups[group] for group in required_groups})


def _parse(path: str, fail) -> Any:
  extension = os.path.splitext(path)[1].lower()
  if extension not in ('.yaml', '.yml', '.json'):
    raise fail(f'unknown extension {extension!r} (use .yaml, .yml or .json)')
  try:
    with open(path) as handle:
      text = handle.read()
  except (OSError, UnicodeDecodeError) as error:
    raise fail(f'cannot read it ({getattr(error, "strerror", None) or error})')
  try:
    return json.loads(text) if extension == '.json' else yaml.safe_load(text)
  except json.JSONDecodeError as error:
    raise fail(f'invalid JSON at line {error.lineno}, column {error.colno}: '
               f'{error.msg}')
  except yaml.YAMLError as error:
    mark = getattr(error, 'problem_mark', None)
    where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark \
        else ''
    raise fail(f'invalid YAML{where}: '
               f'{getattr(error, "problem", None) or error}')


def _host(name: Any, entry: Any, fail) -> Host:
  if not isinstance(name, str) or not name:
    raise fail(f'host name {name!r} must be a non-empty string')
  if not isinstance(entry, dict):
    raise fail(f'host {name!r} must be a mapping with address and prefix')
  unknown = sorted(map(str, set(entry) - {'address', 'prefix'}))
  if unknown:
    raise fail(f'host {name!r}: unknown key {unknown[0]!r} '
               '(only address and prefix)')
  address = entry.get('address')
  if address is None:
    raise fail(f'host {name!r} has no address')
  if not isinstance(address, str) or not _valid_address(address):
    raise fail(f'host {name!r}: address {address!r} is not a hostname or '
               'an IP address peers can dial')
  prefix = () if entry.get('prefix') is None else entry['prefix']
  if isinstance(prefix, str):
    try:
      prefix = shlex.split(prefix)
    except ValueError as error:
      raise fail(f'host {name!r}: prefix {prefix!r}: {error}')
  if not isinstance(prefix, (list, tuple)) or not all(
      isinstance(word, str) for word in prefix):
    raise fail(f'host {name!r}: prefix must be a string or a list of strings')
  return Host(name, address, tuple(prefix))


def _valid_address(address: str) -> bool:
  """An IP literal peers can dial, or an RFC 1123 hostname."""
  try:
    return not ipaddress.ip_address(address).is_unspecified
  except ValueError:
    pass
  labels = address[:-1].split('.') if address.endswith('.') else \
      address.split('.')
  return (len(address) <= 253 and not labels[-1].isdigit() and
          all(_HOSTNAME_LABEL.match(label) for label in labels))


def _is_loopback(address: str) -> bool:
  try:
    return ipaddress.ip_address(address).is_loopback
  except ValueError:
    return address.lower().rstrip('.') == 'localhost'


def _address_key(address: str) -> str:
  """Spellings of one address compare equal (case, trailing dot, IPv6)."""
  try:
    return str(ipaddress.ip_address(address))
  except ValueError:
    return address.lower().rstrip('.')

"""Everything the supervisor needs of Launchpad beyond its public API, in one
place: Launchpad 0.5 prepares a program's nodes for launch only inside its
own launchers, so a launcher of our own goes through the same steps here
(a node's launch context, its handles, its addresses, its command line).
An upgrade of Launchpad is checked against this module alone.
"""
import dataclasses
import tempfile
from typing import Callable, Dict, List

import launchpad as lp
from launchpad import address as lp_address
from launchpad import context


@dataclasses.dataclass(frozen=True)
class NodeCommand:
  group: str
  index: int
  argv: List[str]  # Launchpad's process entry with the serialized program.
  env: Dict[str, str]  # Launchpad's additions to the environment.
  serves: bool  # Peers hold a handle to one of its addresses.


class _HostPort(lp_address.AbstractAddressBuilder):
  """A node's address, fixed at launch (as Launchpad's CLUSTER_SPEC builder
  does on Vertex AI)."""

  def __init__(self, host: str, port: int):
    self._address = f'[{host}]:{port}' if ':' in host else f'{host}:{port}'

  def build(self) -> str:
    return self._address


def node_commands(program: lp.Program, stopper: Callable[[], None],
                  address_of: Callable[[str, int], tuple],
                  serialize_dir: str) -> List[NodeCommand]:
  """Prepares every node as Launchpad's local multi-processing launcher
  would, except that node `index` of `group` serves at `address_of(group,
  index)` (host, port) and lp.stop() calls `stopper`; the serialized program
  is written under `serialize_dir`, which every host must see."""
  for nodes in program.groups.values():
    for node in nodes:
      node._launch_context.initialize(  # pylint: disable=protected-access
          context.LaunchType.LOCAL_MULTI_PROCESSING, None,
          program_stopper=stopper)
  for label, nodes in program.groups.items():
    for node in nodes:
      for handle in node.input_handles:
        handle.connect(node, label)
  for label, nodes in program.groups.items():
    for index, node in enumerate(nodes):
      for address in node.addresses:
        address.bind(_HostPort(*address_of(label, index)))
  # A CourierNode always has an address; it serves only if a peer dials it.
  dialled = {id(handle._address)  # pylint: disable=protected-access
             for nodes in program.groups.values() for node in nodes
             for handle in node.input_handles}
  commands = []
  default_tmp, tempfile.tempdir = tempfile.tempdir, serialize_dir
  try:
    for label, nodes in program.groups.items():
      executables = nodes[0].to_executables(nodes, label,
                                            nodes[0].launch_context)
      for index, executable in enumerate(executables):
        commands.append(NodeCommand(
            label, index, list(executable.command_as_list),
            {k: str(v) for k, v in executable.env_overrides.items()},
            serves=any(id(address) in dialled
                       for address in nodes[index].addresses)))
  finally:
    tempfile.tempdir = default_tmp
  return commands

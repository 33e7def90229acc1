"""How many actor processes a machine holds, so a run it cannot hold is
refused before it starts instead of never reaching its first evaluation.

An actor is a whole node process (its env, its model, its Python): past a
few per core they only take turns, and each costs memory. The rule:

  num_actors <= ACTORS_PER_CORE x the cores this process may run on, and
  (num_actors + the run's other nodes) x NODE_MEMORY_BYTES <= the memory.

`num_actors` is part of a run's identity (a resume cannot lower it), so
the refusal comes first; --oversubscribe starts such a run anyway.
"""
import os
from typing import Optional

ACTORS_PER_CORE = 4
# A forked node process after TF, Reverb and Acme are imported (its pages
# shared with the fork server's until written): a generous resident size.
NODE_MEMORY_BYTES = 256 * 2**20
# replay, counter, learner, evaluator and (quantized runs) the quantizer.
OTHER_NODES = 5


def cores() -> int:
  """The cores this process may run on (its cpuset, not the machine's)."""
  return len(os.sched_getaffinity(0))


def memory_bytes() -> int:
  """The machine's physical memory."""
  return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')


def max_actors(num_cores: int, memory: int,
               other_nodes: int = OTHER_NODES) -> int:
  return max(1, min(ACTORS_PER_CORE * num_cores,
                    memory // NODE_MEMORY_BYTES - other_nodes))


def refusal(num_actors: int, num_cores: Optional[int] = None,
            memory: Optional[int] = None) -> Optional[str]:
  """Why this machine cannot hold `num_actors` actors, or None."""
  num_cores = cores() if num_cores is None else num_cores
  memory = memory_bytes() if memory is None else memory
  limit = max_actors(num_cores, memory)
  if num_actors <= limit:
    return None
  return (f'--num_actors={num_actors} is more than this machine holds '
          f'({limit}: {ACTORS_PER_CORE} per core on {num_cores} cores, and '
          f'{NODE_MEMORY_BYTES // 2**20} MiB per node process in '
          f'{memory / 2**30:.1f} GiB); pass --oversubscribe to start it '
          'anyway')

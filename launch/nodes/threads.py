"""One thread plan for every node process, from its host's cores and the
nodes placed on that host.

TF, Reverb's dataset and LiteRT each size their pools to the whole machine
by default, so 7 node processes on 2 cores oversubscribe them many times
over. The learner (the bottleneck) gets the cores its host's actors and
services do not need; every other node runs single-threaded. With
--pin_cpus (2 or more cores) the learner also gets those cores to itself,
shared only with the replay server it samples from (ActorQ's learner
process hosted its Reverb server): the server then answers while the learner
waits, instead of queueing behind free-running actors.
Under --launch_type=ray each node plans for its own machine (the launcher
tells it, in HOST_NODES_ENV, which groups share that machine); under local_mt
the one process keeps TF's pools at the machine's cores.
"""
import dataclasses
import os
from typing import Optional, Sequence, Set

from absl import logging

from launch.config import RunConfig

# Set by the launcher for each node of a Ray run: the groups of every
# node placed on that node's host, comma-separated (e.g. "actor,actor").
HOST_NODES_ENV = 'QUARL_HOST_NODES'
# Nodes on the learner's cores under --pin_cpus.
LEARNER_SIDE = ('learner', 'replay')


@dataclasses.dataclass(frozen=True)
class ThreadPlan:
  learner_threads: int  # TF intra-op threads of the learner.
  dataset_parallel_calls: int  # The learner's Reverb dataset workers.
  other_threads: int  # TF intra-op threads of every other node.
  litert_threads: int  # Actors' and evaluator's LiteRT interpreters.
  learner_cpus: Optional[Set[int]]  # With --pin_cpus: the learner's cores.
  other_cpus: Optional[Set[int]]  # ... and everyone else's.


def machine_cores() -> int:
  return len(os.sched_getaffinity(0))


def plan(cores: int, num_actors: int, pin_cpus: bool = False,
         services_here: bool = True) -> ThreadPlan:
  """Actors are mostly blocked on the rate limiter: about one core per two
  actors, plus one for evaluator, quantizer and replay together (when any
  of them shares the learner's host)."""
  pinned = pin_cpus and cores >= 2
  # Pinned, the other nodes keep at least one core (on 2 cores: the learner
  # on one, everything else on the other, as ActorQ's learner had a device
  # of its own).
  learner = min(max(1, cores - num_actors // 2 - int(services_here)),
                cores - 1 if pinned else cores)
  all_cpus = sorted(os.sched_getaffinity(0))[:cores] if pinned else None
  return ThreadPlan(
      learner_threads=learner,
      dataset_parallel_calls=min(4, max(1, learner // 2)),
      other_threads=1,
      litert_threads=1,
      learner_cpus=set(all_cpus[:learner]) if pinned else None,
      other_cpus=set(all_cpus[learner:]) if pinned else None)


def host_nodes_value(groups: Sequence[str]) -> str:
  """HOST_NODES_ENV's value for a host running nodes of `groups`."""
  return ','.join(groups)


def plan_for(config: RunConfig) -> ThreadPlan:
  """This process's plan: for its machine's share of the run on a Ray
  cluster, else for the whole machine."""
  placed = os.environ.get(HOST_NODES_ENV)
  if config.launch_type == 'ray' and placed is not None:
    groups = [group for group in placed.split(',') if group]
    return plan(machine_cores(), groups.count('actor'), config.pin_cpus,
                services_here=any(group not in ('actor', 'learner')
                                  for group in groups))
  return plan(machine_cores(), config.num_actors, config.pin_cpus)


def apply(config: RunConfig, node_name: str) -> None:
  """Sets this node process's TF pools (and CPU affinity) from the plan.

  Threaded launches share one process: apply_in_process() sizes it once.
  """
  if config.launch_type == 'local_mt':
    return
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  thread_plan = plan_for(config)
  _set_tf_pools(tf, thread_plan.learner_threads if node_name == 'learner'
                else thread_plan.other_threads, 1, node_name)
  cpus = (thread_plan.learner_cpus if node_name in LEARNER_SIDE
          else thread_plan.other_cpus)
  if cpus:
    _pin_process(cpus)


def _pin_process(cpus: Set[int]) -> None:
  """Every thread of this process, including those already started (gRPC,
  Reverb): sched_setaffinity(0) would pin only the calling thread and the
  threads it starts later."""
  for tid in os.listdir('/proc/self/task'):
    try:
      os.sched_setaffinity(int(tid), cpus)
    except (ProcessLookupError, PermissionError):
      pass  # The thread has exited.


def apply_in_process() -> None:
  """local_mt: every node is a thread of this process, so its TF pools are
  the machine's cores (each node's dataset and LiteRT threads still follow
  plan_for)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cores = machine_cores()
  _set_tf_pools(tf, cores, cores, 'launcher')


def _set_tf_pools(tf, intra_op: int, inter_op: int, who: str) -> None:
  try:
    tf.config.threading.set_intra_op_parallelism_threads(intra_op)
    tf.config.threading.set_inter_op_parallelism_threads(inter_op)
  except RuntimeError:  # TF already started in this process: keep its pools.
    logging.info('%s: TF thread pools already set', who)

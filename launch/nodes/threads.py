"""One thread plan for every node process, from the machine's cores.

TF, Reverb's dataset and LiteRT each size their pools to the whole machine
by default, so 7 node processes on 2 cores oversubscribe them many times
over. The learner (the bottleneck) gets the cores the actors do not need;
every other node runs single-threaded. With --pin_cpus and enough cores the
learner also gets those cores to itself.
"""
import dataclasses
import os
from typing import Optional, Set

from absl import logging

from launch.config import RunConfig


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


def plan(cores: int, num_actors: int, pin_cpus: bool = False) -> ThreadPlan:
  """Actors are mostly blocked on the rate limiter: about one core per two
  actors, plus one for evaluator, quantizer and replay together."""
  learner = max(1, cores - num_actors // 2 - 1)
  pinned = pin_cpus and cores >= 3
  all_cpus = sorted(os.sched_getaffinity(0))[:cores] if pinned else None
  return ThreadPlan(
      learner_threads=learner,
      dataset_parallel_calls=min(4, max(1, learner // 2)),
      other_threads=1,
      litert_threads=1,
      learner_cpus=set(all_cpus[:learner]) if pinned else None,
      other_cpus=set(all_cpus[learner:]) if pinned else None)


def plan_for(config: RunConfig) -> ThreadPlan:
  return plan(machine_cores(), config.num_actors, config.pin_cpus)


def apply(config: RunConfig, node_name: str) -> None:
  """Sets this node process's TF pools (and CPU affinity) from the plan.

  Threaded launches share one process: nothing to set per node there.
  """
  if config.launch_type != 'local_mp':
    return
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  thread_plan = plan_for(config)
  is_learner = node_name == 'learner'
  try:
    tf.config.threading.set_intra_op_parallelism_threads(
        thread_plan.learner_threads if is_learner
        else thread_plan.other_threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # TF already started in this process: keep its pools.
    logging.info('%s: TF thread pools already set', node_name)
  cpus = thread_plan.learner_cpus if is_learner else thread_plan.other_cpus
  if cpus:
    os.sched_setaffinity(0, cpus)

"""The thread plan: who gets which cores."""
import os
import subprocess
import sys

import pytest

from launch.nodes import threads


# CI and the 2-core machines always have two CPUs; a one-CPU machine has
# nothing to pin apart.
_NEEDS_TWO_CPUS = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2,
    reason='pinning puts the learner on one core and the other nodes on the '
    'rest: with one CPU there is no rest to pin them to, so nothing here can '
    'be checked')


@_NEEDS_TWO_CPUS
@pytest.mark.parametrize('num_actors', [1, 4])
def test_pinning_on_two_cores_gives_the_learner_one_of_its_own(num_actors):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    plan = threads.plan(2, num_actors, pin_cpus=True)
    assert plan.learner_cpus == {cpus[0]} and plan.other_cpus == {cpus[1]}
    assert plan.learner_threads == 1


def test_unpinned_plans_leave_affinity_alone():
    plan = threads.plan(2, 4, pin_cpus=False)
    assert plan.learner_cpus is None and plan.other_cpus is None
    assert plan.learner_threads >= 1 and plan.other_threads == 1


_PIN_CHILD = r'''
import os, sys, threading
from absl import flags
from launchpad.launch import worker_manager
from launch import cli
from launch import program
from launch.config import RunConfig
from launch.nodes import counter, threads
started = threading.Event()
waiting = threading.Thread(target=started.wait, daemon=True)
waiting.start()  # A thread that exists before the node places itself.
node, run_dir = sys.argv[1:]
flags.FLAGS.mark_as_parsed()  # Launchpad's flags, at their defaults.
worker_manager.WorkerManager(register_in_thread=True)  # For stop watchers.
config = RunConfig(agent='dqn', env='gym:CartPole-v1', actor_precision='int8',
                   num_actors=2, run_dir=run_dir, pin_cpus=True,
                   agent_config=cli.make_agent_config('dqn', 'gym:CartPole-v1',
                                                      {}))
# Each node as the program starts it: the replay node through its table
# hook, the counter through its constructor, the others through
# common.guarded's threads.apply.
if node == 'replay':
  program._replay_tables(config)
elif node == 'counter':
  counter.CounterNode(config)
else:
  threads.apply(config, node)
print(sorted({tuple(sorted(os.sched_getaffinity(int(tid))))
              for tid in os.listdir('/proc/self/task')}), flush=True)
os._exit(0)  # The stop watchers the hooks started need not be stopped.
'''


@_NEEDS_TWO_CPUS
@pytest.mark.parametrize('node, cpu_index', [('learner', 0), ('replay', 0),
                                              ('counter', 1), ('actor', 1)])
def test_every_node_pins_every_thread_of_its_process(node, cpu_index,
                                                      tmp_path):
    """The replay server's and Courier's threads start before a node's code
    runs; they must follow the plan too."""
    result = subprocess.run(
        [sys.executable, '-c', _PIN_CHILD, node, str(tmp_path)],
        capture_output=True,
        text=True, timeout=120, check=True,
        cwd=os.path.join(os.path.dirname(__file__), '..', '..'))
    cpu = sorted(os.sched_getaffinity(0))[cpu_index]
    assert result.stdout.strip().splitlines()[-1] == str([(cpu,)])

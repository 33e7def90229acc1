"""The thread plan: who gets which cores."""
import os

import pytest

from launch.nodes import threads


# On one CPU there is no second core to give the other nodes: pinning cannot
# be tested there (CI and the 2-core machines always have two).
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                    reason='the plan pins the learner to one core and the '
                    'other nodes to the rest: with one CPU there is no rest '
                    'to pin them to, so nothing here can be checked')
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

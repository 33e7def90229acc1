"""A background sweep's runs, their nodes and their threads run at the idle
scheduling class; a foreground sweep's keep the normal one."""
import functools
import os
import subprocess
import sys

from launch.runtime import sweep

# Prints the scheduling class of a thread the child starts (a node's Reverb,
# gRPC and TF threads are started like it).
_THREAD_POLICY = ('import os, threading\n'
                  'seen = []\n'
                  't = threading.Thread(target=lambda: seen.append('
                  'os.sched_getscheduler(0)))\n'
                  't.start(); t.join(); print(seen[0])\n')


def _policy_of_child(background: bool) -> int:
    result = subprocess.run(
        [sys.executable, '-c', _THREAD_POLICY],
        preexec_fn=functools.partial(sweep.child_setup, background),
        capture_output=True, text=True, timeout=60, check=True)
    return int(result.stdout)


def test_a_background_run_and_its_threads_take_only_idle_cpu():
    assert _policy_of_child(background=True) == os.SCHED_IDLE


def test_a_foreground_run_keeps_the_normal_class():
    assert _policy_of_child(background=False) == os.sched_getscheduler(0)

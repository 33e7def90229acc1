"""The one program builder: the same node graph for every agent.

replay ─┬─> learner ──(variables)──> quantizer ──(model bytes)──> actors
        │                                     └──────────────────> evaluator
        └<───────────── transitions (adders) ──────────── actors
counter <─ learner / actors / evaluator step counts.
With --actor_precision=fp32_tf there is no quantizer: actors and evaluator
pull variables straight from the learner (stock Acme).
"""
import functools
import os

import launchpad as lp
import reverb

from launch.config import RunConfig
from launch.nodes import actor as actor_node
from launch.nodes import common
from launch.nodes import counter as counter_node
from launch.nodes import evaluator as evaluator_node
from launch.nodes import learner as learner_node
from launch.nodes import quantizer as quantizer_node
from launch.nodes import threads
from launch.runtime import run_dir as run_dir_lib


def _replay_tables(config: RunConfig):
  """Runs in the replay node's process (its one hook), so it also places
  the process on its cores (the learner's, under --pin_cpus), records its
  CPU (the pipeline model's learner stage) and starts its stop watcher:
  replay serves until the second stop wave."""
  threads.apply(config, 'replay')
  common.record_cpu_time(config, 'replay')
  common.exit_after_stop(config, service=True)
  return common.make_agent(config).replay_tables()


def _replay_checkpointer(config: RunConfig):
  """Reverb otherwise creates a checkpoint dir under /tmp; keep it ours."""
  return reverb.checkpointers.DefaultCheckpointer(
      os.path.join(config.run_dir, run_dir_lib.REPLAY_DIR))


def build_program(config: RunConfig) -> lp.Program:
  program = lp.Program(name=f'{config.agent}_{config.actor_precision}')
  with program.group('replay'):
    replay = program.add_node(lp.ReverbNode(
        functools.partial(_replay_tables, config),
        functools.partial(_replay_checkpointer, config)))
  with program.group('counter'):
    counter = program.add_node(lp.CourierNode(counter_node.CounterNode, config))
  with program.group('learner'):
    learner = program.add_node(
        lp.CourierNode(learner_node.LearnerNode, replay, counter, config))
  model_source = learner
  if config.quantized:
    with program.group('quantizer'):
      model_source = program.add_node(lp.CourierNode(
          quantizer_node.QuantizerNode, learner, replay, counter, config))
  with program.group('actor'):
    for actor_id in range(config.num_actors):
      program.add_node(lp.CourierNode(actor_node.ActorNode, replay,
                                      model_source, counter, config, actor_id))
  with program.group('evaluator'):
    program.add_node(lp.CourierNode(evaluator_node.EvaluatorNode,
                                    model_source, learner, counter, config))
  return program

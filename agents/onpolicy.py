"""What on-policy agents (A2C, PPO) share: queue, adder, network, actors.

Actors write fixed-length trajectories of T+1 steps every T steps (Acme's
SequenceAdder; consecutive trajectories share their boundary step, whose
value bootstraps the first) into a Reverb queue: each trajectory is sampled
once, in order, and actors block while the queue is full, so the data stays
close to the learner's policy. Trajectories run on across episode ends
(end-of-episode behaviour CONTINUE, as batched-environment A2C does); the
learner masks the adder's end-of-episode rows. Every step carries as extras
the behaviour log-probability of its action and the learner step of the
model that chose it (the policy lag the learner logs).
"""
import abc
from typing import Callable, List

import acme
import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf
from acme import datasets
from acme.adders import reverb as reverb_adders
from acme.tf import variable_utils

from agents import compiled
from agents import interface
from agents import replay
from agents import reverb_compat
from agents import tf_actor
from quarl.actors import exploration as exploration_lib


class OnPolicyAgent(interface.Agent):
  """Discrete-action actor-critic over pixels or flat vectors; subclasses
  give the network, the learner and its optimizer. The config needs
  unroll_length, batch_size, queue_size, discount, entropy_cost, value_cost,
  max_gradient_norm, mlp_layers and calibration_size."""

  action_kind = 'discrete'
  observation_kinds = ('pixel', 'vector')
  on_policy = True

  @abc.abstractmethod
  def network(self) -> snt.Module:
    """A fresh actor-critic (obs -> (logits, value)), variables created,
    with `policy` (obs -> logits) and `torso.compressible_layers`."""

  @abc.abstractmethod
  def make_optimizer(self) -> snt.Optimizer:
    """A fresh optimizer for the learner."""

  @abc.abstractmethod
  def new_learner(self, **kwargs):
    """The agent's ActorCriticLearner (or subclass) on the shared
    arguments make_learner gives."""

  @property
  def num_actions(self) -> int:
    return int(self.environment_spec.actions.num_values)

  @staticmethod
  def learner_steps(config, actor_steps: int) -> int:
    """One learner step per batch of unrolls: each env step is used once."""
    return actor_steps // (config.batch_size * config.unroll_length)

  @property
  def sequence_length(self) -> int:
    return self.config.unroll_length + 1

  @property
  def observations_per_item(self) -> int:
    return self.sequence_length

  def item_observations(self, items: np.ndarray) -> np.ndarray:
    """Sequence items' field 0: their observations, one per step."""
    return np.asarray(items, np.float32).reshape(-1, self.observation_size)

  def replay_tables(self) -> List[reverb.Table]:
    extras = dict(log_prob=tf.TensorSpec((), tf.float32),
                  policy_step=tf.TensorSpec((), tf.int64))
    signature = reverb_adders.SequenceAdder.signature(
        self.environment_spec, extras, self.sequence_length)
    queue = reverb.Table.queue(replay.REPLAY_TABLE,
                               max_size=self.config.queue_size,
                               signature=signature)
    return [queue, replay.calibration_table(
        signature, max_size=self.config.calibration_size)]

  def make_adder(self, replay_client: reverb.Client):
    return reverb_adders.SequenceAdder(
        client=reverb_compat.AdderClient(replay_client),
        sequence_length=self.sequence_length,
        period=self.config.unroll_length,
        # One trajectory waiting per actor at most: data queued behind a
        # full queue is data from an older policy.
        max_in_flight_items=1,
        end_of_episode_behavior=reverb_adders.EndBehavior.CONTINUE,
        priority_fns={replay.REPLAY_TABLE: None,
                      replay.CALIBRATION_TABLE: None})

  def replay_dataset(self, replay_client: reverb.Client,
                     parallel_calls: int = replay.DATASET_PARALLEL_CALLS
                     ) -> tf.data.Dataset:
    """Batches of trajectories in queue order: one worker with at most one
    batch in flight and no prefetch, so data waits in the queue (where
    actors see it is full) rather than in the learner."""
    del parallel_calls  # More workers would only hold more stale batches.
    return datasets.make_reverb_dataset(
        table=replay.REPLAY_TABLE,
        server_address=replay_client.server_address,
        batch_size=self.config.batch_size,
        num_parallel_calls=1,
        max_in_flight_samples_per_worker=self.config.batch_size)

  def make_learner(self, replay_client: reverb.Client, counter, logger,
                   compile_mode: str = 'xla',
                   dataset_parallel_calls: int = (
                       replay.DATASET_PARALLEL_CALLS),
                   report_every_s: float = compiled.REPORT_EVERY_S
                   ) -> interface.LearnerBundle:
    """See interface.Agent; the learner logs every `report_every_s`."""
    config = self.config
    network = self.network()
    learner = self.new_learner(
        network=network, optimizer=self.make_optimizer(),
        dataset=self.replay_dataset(replay_client, dataset_parallel_calls),
        discount=config.discount, entropy_cost=config.entropy_cost,
        value_cost=config.value_cost,
        max_gradient_norm=config.max_gradient_norm,
        num_epochs=config.num_epochs, counter=counter, logger=logger,
        compile_mode=compile_mode, report_every_s=report_every_s)
    return interface.LearnerBundle(
        learner=learner, checkpointables=learner.state, networks=[network],
        compressible_layers=network.torso.compressible_layers)

  def export_policy(self) -> snt.Module:
    """The logits network: frames -> logits (sampling runs in float in
    behaviour())."""
    return self.network().policy

  def exploration(self, actor_id: int, num_actors: int) -> float:
    """1: every actor samples the policy itself (on-policy data)."""
    del actor_id, num_actors
    return 1.0

  def behaviour(self, exploration: float, rng: np.random.Generator,
                model_step: interface.ModelStep
                ) -> Callable[[np.ndarray], tuple]:
    """Samples softmax(logits), stamping each step with `model_step()`,
    the learner step of the acting model.

    The evaluator's exploration 0 samples too: the stochastic policy is
    what A2C/PPO learn and report, and the argmax of a near-uniform policy
    can stall Breakout (it never serves) for 27,000 steps a game.
    """
    del exploration  # The policy is its own exploration.
    return exploration_lib.categorical_behaviour(rng, model_step)

  def make_tf_actor(self, variable_source: acme.VariableSource, adder,
                    exploration: float, rng: np.random.Generator,
                    variable_update_period: int = 1000) -> acme.Actor:
    """Acme's TF actor, pulling the learner's step with its variables at
    least once a trajectory: on-policy data from a policy many updates old
    is what PPO's clip and V-trace must correct, and at Acme's period of
    1,000 env steps an actor's trajectories came from a policy several
    learner updates old."""
    policy = self.export_policy()
    learner_step = tf.Variable(-1, dtype=tf.int64)
    variable_client = variable_utils.VariableClient(
        variable_source, {'policy': policy.variables,
                          interface.LEARNER_STEP: [learner_step]},
        update_period=min(variable_update_period, self.config.unroll_length))
    variable_client.update_and_wait()
    return tf_actor.TFBehaviourActor(
        policy, adder, variable_client,
        self.behaviour(exploration, rng, lambda: int(learner_step.numpy())))

"""A2C's learner: each queued batch of trajectories used once.

A batch holds B fixed-length trajectories of T+1 steps (Acme Steps, the
last step only for its value). Step t's action led to step t+1; where step
t+1 starts a new episode, step t is the adder's zero-filled end-of-episode
row (no action was taken there) and is masked out. Its return is its own
value (pcontinue 0), so an episode that ended by time limit (discount 1)
bootstraps from the final observation, and a game over (discount 0) does not.

The update reads top to bottom: targets from the values before any update,
then `num_epochs` gradient steps of policy loss + value loss - entropy bonus,
each followed by the compression constraint. A2C's targets are V-trace's
(IMPALA's, trfl's ops): on-policy they are exactly n-step returns and
advantages, and where the acting model lagged the learner (it is published
once per publish period) or its int8 logits differ, truncated importance weights
from the stored behaviour log-probabilities correct for it; uncorrected,
Breakout's A2C diverged here (entropy 0 after 4,250 steps at lag ~50).
PPO (agents/ppo/learning.py) changes the targets to GAE, the policy loss
and the update's minibatches.
"""
from typing import Dict, List, NamedTuple

import acme
import numpy as np
import sonnet as snt
import tensorflow as tf
import tree
import trfl
from acme.tf import utils as tf2_utils
from acme.utils import counting
from acme.utils import loggers

from agents import compiled
from agents import interface


class Batch(NamedTuple):
  """Time-major [T, B] views of a batch of trajectories."""
  observations: tf.Tensor  # [T+1, B, ...]: the last for bootstrapping.
  actions: tf.Tensor
  rewards: tf.Tensor  # Clipped to [-1, 1].
  discounts: tf.Tensor
  valid: tf.Tensor  # 1.0 where the step's action was taken in its episode.
  behaviour_log_probs: tf.Tensor
  policy_steps: tf.Tensor  # Learner step of the model that acted.


class Targets(NamedTuple):
  returns: tf.Tensor  # [T, B], no gradient.
  advantages: tf.Tensor  # [T, B], no gradient.


def masked_mean(values: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
  return tf.reduce_sum(values * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def time_major_batch(data) -> Batch:
  """Batch of a sampled trajectory batch (acme Step, [B, T+1, ...])."""
  data = tree.map_structure(
      lambda x: tf.transpose(x, [1, 0] + list(range(2, x.shape.rank))), data)
  valid = tf.cast(tf.logical_not(data.start_of_episode[1:]), tf.float32)
  return Batch(
      observations=data.observation,
      actions=data.action[:-1],
      rewards=tf.clip_by_value(tf.cast(data.reward[:-1], tf.float32), -1., 1.),
      discounts=tf.cast(data.discount[:-1], tf.float32),
      valid=valid,
      behaviour_log_probs=data.extras['log_prob'][:-1],
      policy_steps=data.extras['policy_step'][:-1])


@tf.function
def _read_all(variables):
  return [variable.read_value() for variable in variables]


class ActorCriticLearner(compiled.CompiledLearnerMixin, acme.Learner):
  """On-policy actor-critic learner over a Reverb queue (compiled step)."""

  def __init__(self, *, network: snt.Module, optimizer: snt.Optimizer,
               dataset, discount: float, entropy_cost: float, value_cost: float,
               max_gradient_norm: float, num_epochs: int = 1,
               counter=None, logger=None, compile_mode: str = 'xla',
               report_every_s: float = compiled.REPORT_EVERY_S):
    self._network = network
    self._optimizer = optimizer
    self._discount = discount
    self._entropy_cost = entropy_cost
    self._value_cost = value_cost
    self._max_gradient_norm = max_gradient_norm
    self._num_epochs = num_epochs
    self._num_steps = tf.Variable(0, dtype=tf.int64)
    self._init_compiled(iter(dataset), compile_mode,
                        counter or counting.Counter(),
                        logger or loggers.TerminalLogger('learner', 1.0),
                        report_every_s)

  @property
  def state(self) -> Dict[str, object]:
    return dict(network=self._network, optimizer=self._optimizer,
                num_steps=self._num_steps)

  def _outputs(self, observations: tf.Tensor):
    """Logits [T+1, B, A] and values [T+1, B] of time-major frames."""
    steps, batch = observations.shape[:2]
    logits, values = self._network(
        tf.reshape(observations, [steps * batch] + observations.shape[2:]))
    return (tf.reshape(logits, [steps, batch, -1]),
            tf.reshape(values, [steps, batch]))

  def _masked_rewards(self, values: tf.Tensor, batch: Batch):
    """Rewards and pcontinues [T, B] under which a masked step returns its
    own value (see the module docstring); `values` [T+1, B]."""
    rewards = tf.where(batch.valid > 0, batch.rewards, values[:-1])
    return rewards, self._discount * batch.discounts * batch.valid

  def _targets(self, values: tf.Tensor, log_rhos: tf.Tensor,
               batch: Batch) -> Targets:
    """V-trace targets (rho and c truncated at 1) from `values` [T+1, B] and
    the learner-to-behaviour log-ratios of the actions taken."""
    values = tf.stop_gradient(values)
    rewards, pcontinues = self._masked_rewards(values, batch)
    vtrace = trfl.vtrace_from_importance_weights(
        log_rhos=log_rhos * batch.valid, discounts=pcontinues,
        rewards=rewards, values=values[:-1], bootstrap_value=values[-1])
    return Targets(vtrace.vs, vtrace.pg_advantages)

  def _policy_loss(self, logits: tf.Tensor, targets: Targets,
                   batch: Batch) -> tf.Tensor:
    """Per-step policy-gradient loss [T, B]: -log pi(a) * advantage (the
    advantage carries V-trace's truncated importance weight)."""
    return trfl.discrete_policy_gradient(logits, batch.actions,
                                         targets.advantages)

  def _loss(self, logits, values, targets: Targets, batch: Batch):
    """Total loss and its parts over the steps that have targets (logits
    and values without the bootstrap step)."""
    policy_loss = masked_mean(self._policy_loss(logits, targets, batch),
                              batch.valid)
    value_loss = masked_mean(0.5 * tf.square(targets.returns - values),
                             batch.valid)
    entropy_loss, extra = trfl.discrete_policy_entropy_loss(logits)
    entropy_loss = masked_mean(entropy_loss, batch.valid)
    loss = (policy_loss + self._value_cost * value_loss +
            self._entropy_cost * entropy_loss)
    return loss, dict(loss=loss, policy_loss=policy_loss,
                      value_loss=value_loss,
                      entropy=masked_mean(extra.entropy, batch.valid))

  @staticmethod
  def _log_rhos(logits: tf.Tensor, batch: Batch) -> tf.Tensor:
    """log pi(a) - log mu(a) [T, B] of the actions taken (no gradient)."""
    log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=batch.actions, logits=logits[:-1])
    return tf.stop_gradient(log_probs - batch.behaviour_log_probs)

  def _off_policy_metrics(self, log_rhos: tf.Tensor,
                          batch: Batch) -> Dict[str, tf.Tensor]:
    """How far the data is from the learner's policy before this update:
    the behaviour-to-learner KL estimate and largest ratio error (policy lag
    and actor quantization both show here), and the mean lag in learner
    steps of the models that acted (stamped -1 when unknown)."""
    known = batch.valid * tf.cast(batch.policy_steps >= 0, tf.float32)
    lag = tf.cast(self._num_steps - batch.policy_steps, tf.float32)
    return dict(
        behaviour_kl=masked_mean(-log_rhos, batch.valid),
        max_ratio_error=tf.reduce_max(
            tf.abs(tf.exp(log_rhos) - 1.0) * batch.valid),
        policy_lag=masked_mean(lag, known))

  def _compiled_update(self, sample) -> Dict[str, tf.Tensor]:
    batch = time_major_batch(sample.data)
    targets, metrics = None, {}
    for _ in range(self._num_epochs):
      with tf.GradientTape() as tape:
        logits, values = self._outputs(batch.observations)
        if targets is None:  # Before any update: the data's own values.
          log_rhos = self._log_rhos(logits, batch)
          targets = self._targets(values, log_rhos, batch)
          metrics.update(self._off_policy_metrics(log_rhos, batch))
        loss, losses = self._loss(logits[:-1], values[:-1], targets, batch)
      self._descend(tape, loss)
    self._num_steps.assign_add(1)
    return {**metrics, **losses}

  def _descend(self, tape: tf.GradientTape, loss: tf.Tensor) -> None:
    """One optimizer step on `loss` (gradients clipped by global norm),
    then the compression constraint."""
    variables = self._network.trainable_variables
    gradients = tape.gradient(loss, variables)
    self._record_gradients(gradients, variables)
    gradients, _ = tf.clip_by_global_norm(gradients, self._max_gradient_norm)
    self._optimizer.apply(gradients, variables)
    self._apply_constraint()

  def get_variables(self, names: List[str]) -> List[List[np.ndarray]]:
    """'policy': every variable of the logits network (GST state included,
    in the exported network's order); LEARNER_STEP: this learner's steps.

    All read in one graph call, so a courier thread reading while the
    learner steps gets one update's weights, never a mix of two."""
    *policy, step = tf2_utils.to_numpy(_read_all(
        list(self._network.policy.variables) + [self._num_steps]))
    return [[step] if name == interface.LEARNER_STEP else policy
            for name in names]

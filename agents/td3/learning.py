"""TD3 learner (Fujimoto et al. 2018) on Acme's TF building blocks.

One `step()` is one iteration of the paper's Algorithm 1: a critic update
from clipped double-Q targets with target policy smoothing and, every
`policy_update_period` steps, a deterministic policy gradient update followed
by a Polyak update of all three target networks.

The whole step is one compiled update (agents/compiled.py). GST attaches as
a collaborator: `constrain` runs inside it after the optimizer updates, so a
compression controller re-imposes masks or circulant projections before the
targets average them in.
"""
from typing import Any, Dict, Iterator, List, Optional, Sequence

import acme
import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf
from acme import specs
from acme import types
from acme.tf import utils as tf2_utils
from acme.utils import counting
from acme.utils import loggers

from agents import compiled


class TD3Learner(compiled.CompiledLearnerMixin, acme.Learner):
  """Twin-critic, delayed-policy DDPG learner over Reverb transition batches.

  Exposes the ONLINE policy's variables as 'policy' (what actors explore
  with), in the order of `policy.variables`.
  """

  def __init__(
      self,
      policy_network: snt.Module,
      critic_networks: Sequence[snt.Module],
      target_policy_network: snt.Module,
      target_critic_networks: Sequence[snt.Module],
      action_spec: specs.BoundedArray,
      dataset_iterator: Iterator[reverb.ReplaySample],
      discount: float = 0.99,
      policy_optimizer: Optional[snt.Optimizer] = None,
      critic_optimizer: Optional[snt.Optimizer] = None,
      tau: float = 0.005,
      policy_update_period: int = 2,
      target_noise: float = 0.2,
      target_noise_clip: float = 0.5,
      counter: Optional[counting.Counter] = None,
      logger: Optional[loggers.Logger] = None,
      compile_mode: str = 'xla',
      report_every_s: float = compiled.REPORT_EVERY_S,
  ):
    """Networks must be built; targets start as copies of the online ones.

    `target_noise` and its clip are in units of the action half-range.
    """
    if len(critic_networks) != 2 or len(target_critic_networks) != 2:
      raise ValueError('TD3 needs exactly two critics and two target critics')
    self._policy = policy_network
    self._critics = tuple(critic_networks)
    self._target_policy = target_policy_network
    self._target_critics = tuple(target_critic_networks)
    self._discount = discount
    self._policy_optimizer = policy_optimizer or snt.optimizers.Adam(3e-4)
    self._critic_optimizer = critic_optimizer or snt.optimizers.Adam(3e-4)
    self._tau = tau
    self._policy_update_period = policy_update_period
    self._target_noise = target_noise
    self._target_noise_clip = target_noise_clip
    self._action_min = tf.constant(action_spec.minimum, tf.float32)
    self._action_max = tf.constant(action_spec.maximum, tf.float32)
    self._action_scale = (self._action_max - self._action_min) / 2
    self._counter = counter or counting.Counter()
    self._logger = logger or loggers.make_default_logger('learner',
                                                         save_data=False)
    self._num_steps = tf.Variable(0, dtype=tf.int64, name='num_steps')
    self._seed = tf.constant(int(tf.random.uniform([], 0, 2**31 - 1,
                                                   tf.int64)), tf.int64)
    # Logged every step, so CSV headers (fixed by the first row) include it.
    self._policy_loss = tf.Variable(np.nan, dtype=tf.float32,
                                    name='policy_loss')
    self._init_compiled(dataset_iterator, compile_mode, self._counter,
                        self._logger, report_every_s)

  @property
  def num_steps(self) -> int:
    """Learner steps (critic updates) done so far."""
    return int(self._num_steps.numpy())

  @property
  def state(self) -> Dict[str, Any]:
    """Everything a checkpoint needs to resume this learner exactly."""
    return {
        'policy': self._policy,
        'critic1': self._critics[0],
        'critic2': self._critics[1],
        'target_policy': self._target_policy,
        'target_critic1': self._target_critics[0],
        'target_critic2': self._target_critics[1],
        'policy_optimizer': self._policy_optimizer,
        'critic_optimizer': self._critic_optimizer,
        'num_steps': self._num_steps,
    }

  def _compiled_update(self, sample) -> Dict[str, tf.Tensor]:
    """Critics; every `policy_update_period` steps the policy, then (after
    the constraint) the targets."""
    transitions: types.Transition = sample.data
    update_policy = tf.equal(
        (self._num_steps + 1) % self._policy_update_period, 0)
    critic_loss = self._update_critics(transitions)
    tf.cond(update_policy,
            lambda: self._update_policy(transitions.observation),
            tf.no_op)
    self._num_steps.assign_add(1)
    self._apply_constraint()
    tf.cond(update_policy, self._update_targets, tf.no_op)
    return {'critic_loss': critic_loss,
            'policy_loss': self._policy_loss.read_value()}

  def _update_critics(self, transitions: types.Transition) -> tf.Tensor:
    """Both critics regress on r + gamma * d * min(Q1', Q2')(s', a')."""
    # Target policy smoothing: clipped noise on the target action.
    next_action = self._target_policy(transitions.next_observation)
    # Stateless, keyed by (seed, step): a resumed run draws what it would
    # have. (XLA's kernel draws another stream than TF's, same law.)
    noise = self._target_noise * tf.random.stateless_normal(
        tf.shape(next_action), seed=tf.stack([self._seed, self._num_steps]))
    noise = tf.clip_by_value(noise, -self._target_noise_clip,
                             self._target_noise_clip)
    next_action = tf.clip_by_value(next_action + noise * self._action_scale,
                                   self._action_min, self._action_max)

    # Clipped double-Q: bootstrap from the smaller of the two target critics.
    next_q = tf.minimum(
        self._target_critics[0](transitions.next_observation, next_action),
        self._target_critics[1](transitions.next_observation, next_action))
    discount = tf.cast(self._discount * transitions.discount, next_q.dtype)
    target_q = tf.stop_gradient(
        tf.cast(transitions.reward, next_q.dtype) + discount * next_q)

    variables = [v for critic in self._critics
                 for v in critic.trainable_variables]
    with tf.GradientTape() as tape:
      critic_loss = tf.add_n([
          tf.reduce_mean(tf.square(
              critic(transitions.observation, transitions.action) - target_q))
          for critic in self._critics])
    gradients = tape.gradient(critic_loss, variables)
    self._record_gradients(gradients, variables)
    self._critic_optimizer.apply(gradients, variables)
    return critic_loss

  def _update_policy(self, observation: tf.Tensor) -> tf.Operation:
    """Deterministic policy gradient through the first critic."""
    variables = self._policy.trainable_variables
    with tf.GradientTape() as tape:
      policy_loss = -tf.reduce_mean(
          self._critics[0](observation, self._policy(observation)))
    gradients = tape.gradient(policy_loss, variables)
    self._record_gradients(gradients, variables)
    self._policy_optimizer.apply(gradients, variables)
    self._policy_loss.assign(policy_loss)
    return tf.no_op()

  def _update_targets(self) -> tf.Operation:
    """target <- tau * online + (1 - tau) * target, trainable weights only."""
    pairs = [(self._policy, self._target_policy),
             *zip(self._critics, self._target_critics)]
    for online, target in pairs:
      for source, destination in zip(online.trainable_variables,
                                     target.trainable_variables):
        destination.assign(self._tau * source +
                           (1.0 - self._tau) * destination)
    return tf.no_op()

  def get_variables(self, names: List[str]) -> List[List[np.ndarray]]:
    """Only 'policy' is served: the online policy, for actors to explore."""
    variables = {'policy': self._policy.variables}
    return [tf2_utils.to_numpy(variables[name]) for name in names]

"""PPO's learner: A2C's (agents/a2c/learning.py) with GAE and the clipped
surrogate.

Returns and advantages (GAE, no importance weights) come from the values
before the batch's first epoch and hold through all epochs; the ratio is
against the behaviour log-probabilities the actors stored, so the clip
bounds the update against what int8 actors actually did.
"""
import tensorflow as tf
import trfl

from agents.a2c import learning


class PPOLearner(learning.ActorCriticLearner):
  """Clipped-surrogate policy loss, `num_epochs` steps per batch."""

  def __init__(self, *, clip_epsilon: float, gae_lambda: float, **kwargs):
    self._clip_epsilon = clip_epsilon
    self._gae_lambda = gae_lambda
    super().__init__(**kwargs)

  def _targets(self, values: tf.Tensor, log_rhos: tf.Tensor,
               batch: learning.Batch) -> learning.Targets:
    """GAE(lambda) returns and advantages; the clip, not the targets,
    handles the behaviour policy."""
    del log_rhos
    values = tf.stop_gradient(values)
    rewards, pcontinues = self._masked_rewards(values, batch)
    returns = trfl.generalized_lambda_returns(
        rewards, pcontinues, values[:-1], values[-1], self._gae_lambda)
    return learning.Targets(returns, returns - values[:-1])

  def _policy_loss(self, logits: tf.Tensor, targets: learning.Targets,
                   batch: learning.Batch) -> tf.Tensor:
    """-min(r A, clip(r, 1 - eps, 1 + eps) A) per step, A normalised over
    the batch's valid steps."""
    mean = learning.masked_mean(targets.advantages, batch.valid)
    variance = learning.masked_mean(tf.square(targets.advantages - mean),
                                    batch.valid)
    advantages = (targets.advantages - mean) / (tf.sqrt(variance) + 1e-8)
    log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=batch.actions, logits=logits)
    ratio = tf.exp(log_probs - batch.behaviour_log_probs)
    clipped = tf.clip_by_value(ratio, 1.0 - self._clip_epsilon,
                               1.0 + self._clip_epsilon)
    return -tf.minimum(ratio * advantages, clipped * advantages)

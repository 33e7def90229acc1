"""PPO's learner: A2C's (agents/a2c/learning.py) with the clipped surrogate.

Returns and advantages come from the values before the batch's first epoch
and hold through all epochs; the ratio is against the behaviour
log-probabilities the actors stored, so int8 actors' own policy is what is
corrected for.
"""
import tensorflow as tf

from agents.a2c import learning


class PPOLearner(learning.ActorCriticLearner):
  """Clipped-surrogate policy loss, `num_epochs` steps per batch."""

  def __init__(self, *, clip_epsilon: float, **kwargs):
    self._clip_epsilon = clip_epsilon
    super().__init__(**kwargs)

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

"""PPO's learner: A2C's (agents/a2c/learning.py) with GAE, the clipped
surrogate and shuffled minibatches, as Stable-Baselines3 runs Atari PPO.

Returns and advantages (GAE, no importance weights) come from the values
before the batch's first epoch and hold through all epochs; the ratio is
against the behaviour log-probabilities the actors stored, so the clip
bounds the update against what int8 actors actually did. Each epoch shuffles
the batch's T x B steps across trajectories and takes one gradient step per
minibatch, advantages normalised within it. The learning rate and the clip
fall linearly to 0 over `anneal_steps` learner steps (the RL Zoo's `lin_`
schedules), counted by the learner's own step so a resumed run goes on from
where it stopped.
"""
import tensorflow as tf
import tree
import trfl

from agents.a2c import learning


class PPOLearner(learning.ActorCriticLearner):
  """Clipped-surrogate policy loss; `num_epochs` passes of
  `num_minibatches` gradient steps per batch."""

  def __init__(self, *, clip_epsilon: float, gae_lambda: float,
               num_minibatches: int, anneal_steps: int, **kwargs):
    self._clip_epsilon = clip_epsilon
    self._gae_lambda = gae_lambda
    self._num_minibatches = num_minibatches
    self._anneal_steps = anneal_steps
    super().__init__(**kwargs)
    # The optimizer's learning rate is a variable (PPOAgent.make_optimizer);
    # this is its value at the start of the run.
    self._initial_learning_rate = float(
        self._optimizer.learning_rate.numpy())

  def _remaining(self) -> tf.Tensor:
    """Fraction of the annealing left after this update (SB3's progress
    remaining once a rollout is collected); 1 when nothing anneals."""
    if not self._anneal_steps:
      return tf.constant(1.0)
    done = tf.cast(self._num_steps + 1, tf.float32) / self._anneal_steps
    return tf.maximum(0.0, 1.0 - done)

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
    the valid steps given, eps annealed."""
    mean = learning.masked_mean(targets.advantages, batch.valid)
    variance = learning.masked_mean(tf.square(targets.advantages - mean),
                                    batch.valid)
    advantages = (targets.advantages - mean) / (tf.sqrt(variance) + 1e-8)
    log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=batch.actions, logits=logits)
    ratio = tf.exp(log_probs - batch.behaviour_log_probs)
    clip = self._clip_epsilon * self._remaining()
    clipped = tf.clip_by_value(ratio, 1.0 - clip, 1.0 + clip)
    return -tf.minimum(ratio * advantages, clipped * advantages)

  def _compiled_update(self, sample):
    batch = learning.time_major_batch(sample.data)
    logits, values = self._outputs(batch.observations)
    log_rhos = self._log_rhos(logits, batch)
    targets = self._targets(values, log_rhos, batch)
    metrics = self._off_policy_metrics(log_rhos, batch)
    self._optimizer.learning_rate.assign(
        self._initial_learning_rate * self._remaining())
    # Every step with a target, flattened [T * B, ...] across trajectories.
    steps = tree.map_structure(
        lambda x: tf.reshape(x, [-1] + x.shape[2:].as_list()),
        (batch._replace(observations=batch.observations[:-1]), targets))
    size = steps[1].returns.shape[0]
    part_size = size // self._num_minibatches

    # One traced gradient step in a loop, not epochs x minibatches copies of
    # it: XLA compiled the unrolled form for 1.5-2 minutes.
    def minibatch_step(index, order, unused_losses=None):
      order = tf.cond(index % self._num_minibatches == 0,
                      lambda: tf.argsort(tf.random.uniform([size])),
                      lambda: order)
      part = tf.slice(order, [(index % self._num_minibatches) * part_size],
                      [part_size])
      minibatch, minibatch_targets = tree.map_structure(
          lambda x: tf.gather(x, part), steps)
      with tf.GradientTape() as tape:
        logits, values = self._network(minibatch.observations)
        loss, losses = self._loss(logits, values, minibatch_targets,
                                  minibatch)
      self._descend(tape, loss)
      return index + 1, order, losses

    _, _, losses = minibatch_step(tf.constant(0), tf.range(size))
    _, _, losses = tf.while_loop(
        lambda index, order, losses: index < self._num_epochs *
        self._num_minibatches, minibatch_step,
        (tf.constant(1), tf.range(size), losses))
    self._num_steps.assign_add(1)
    return {**metrics, **losses,
            'learning_rate': self._optimizer.learning_rate.read_value()}

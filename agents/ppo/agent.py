"""PPO for ActorQ: A2C's agent with PPO's learner."""
import sonnet as snt
import tensorflow as tf

from agents.a2c.agent import A2CAgent
from agents.ppo.config import PPOConfig
from agents.ppo.learning import PPOLearner


class PPOAgent(A2CAgent):
  """Clipped-surrogate PPO over A2C's queue, network and actors."""

  config: PPOConfig

  def new_learner(self, **kwargs) -> PPOLearner:
    return PPOLearner(clip_epsilon=self.config.clip_epsilon,
                      gae_lambda=self.config.gae_lambda,
                      num_minibatches=self.config.num_minibatches,
                      anneal_steps=self.config.anneal_steps, **kwargs)

  def make_optimizer(self) -> snt.Optimizer:
    """Adam whose learning rate the learner anneals (a variable, saved
    with the optimizer)."""
    return snt.optimizers.Adam(
        tf.Variable(self.config.learning_rate, trainable=False,
                    name='learning_rate'),
        epsilon=self.config.adam_epsilon)

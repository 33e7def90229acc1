"""PPO for ActorQ: A2C's agent with PPO's learner and Adam."""
import sonnet as snt

from agents.a2c.agent import A2CAgent
from agents.ppo.config import PPOConfig
from agents.ppo.learning import PPOLearner


class PPOAgent(A2CAgent):
  """Clipped-surrogate PPO over A2C's queue, network and actors."""

  config: PPOConfig

  def new_learner(self, **kwargs) -> PPOLearner:
    return PPOLearner(clip_epsilon=self.config.clip_epsilon, **kwargs)

  def make_optimizer(self) -> snt.Optimizer:
    return snt.optimizers.Adam(self.config.learning_rate,
                               epsilon=self.config.adam_epsilon)

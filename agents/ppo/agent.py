"""PPO for ActorQ: A2C's agent with PPO's learner."""
from agents.a2c.agent import A2CAgent
from agents.ppo.config import PPOConfig
from agents.ppo.learning import PPOLearner


class PPOAgent(A2CAgent):
  """Clipped-surrogate PPO over A2C's queue, network, optimizer and actors."""

  config: PPOConfig

  def new_learner(self, **kwargs) -> PPOLearner:
    return PPOLearner(clip_epsilon=self.config.clip_epsilon,
                      gae_lambda=self.config.gae_lambda, **kwargs)

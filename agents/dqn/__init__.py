"""DQN with prioritised replay for ActorQ, on Acme's TF learner."""
from agents.dqn.agent import DQNAgent as AGENT_CLASS
from agents.dqn.config import config_for_env

__all__ = ['AGENT_CLASS', 'config_for_env']

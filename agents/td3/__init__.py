"""TD3 (twin delayed DDPG) for ActorQ and GST, on our TF learner."""
from agents.td3.agent import TD3Agent as AGENT_CLASS
from agents.td3.config import config_for_env

__all__ = ['AGENT_CLASS', 'config_for_env']

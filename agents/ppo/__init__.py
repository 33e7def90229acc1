"""PPO for ActorQ: the GST paper's PPO row (Football; Atari too)."""
from agents.ppo.agent import PPOAgent as AGENT_CLASS
from agents.ppo.config import config_for_env

__all__ = ['AGENT_CLASS', 'config_for_env']

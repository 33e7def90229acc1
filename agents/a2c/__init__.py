"""A2C for ActorQ on pixels or flat vectors, through a Reverb queue."""
from agents.a2c.agent import A2CAgent as AGENT_CLASS
from agents.a2c.config import config_for_env

__all__ = ['AGENT_CLASS', 'config_for_env']

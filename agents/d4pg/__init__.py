"""D4PG (distributional DDPG) for ActorQ, on Acme's TF learner."""
from agents.d4pg.agent import D4PGAgent as AGENT_CLASS
from agents.d4pg.config import config_for_env

__all__ = ['AGENT_CLASS', 'config_for_env']

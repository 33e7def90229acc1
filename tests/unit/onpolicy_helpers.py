"""A real Reverb queue on ale:Breakout (or `game`), filled by an on-policy agent's own
adder through its TF actor acting with the learner's policy."""
import acme
import numpy as np
import reverb
from acme import specs
from acme.utils import loggers

from quarl import envs
from replay_helpers import RecordingLogger

GAME = 'ale:Breakout'


def start(agent_package, game=GAME, **overrides):
  """(agent, server, client, bundle, logger): the learner logs every step."""
  environment = envs.make_environment(game, 0, training=True)
  agent = agent_package.AGENT_CLASS(
      specs.make_environment_spec(environment),
      agent_package.config_for_env(game, **overrides))
  server = reverb.Server(agent.replay_tables(), port=None)
  client = reverb.Client(f'localhost:{server.port}')
  logger = RecordingLogger()
  bundle = agent.make_learner(client, None, logger, report_every_s=0.0)
  return agent, server, client, bundle, logger


def act(agent, learner, client, num_trajectories: int, seed: int = 0,
        game=GAME):
  """Plays training episodes with the learner's current policy until
  `num_trajectories` trajectories are queued (fewer than the queue holds,
  or the actor would block)."""
  environment = envs.make_environment(game, seed, training=True)
  actor = agent.make_tf_actor(learner, agent.make_adder(client), 1.0,
                              np.random.default_rng(seed))
  loop = acme.EnvironmentLoop(environment, actor, should_update=False,
                              logger=loggers.NoOpLogger())
  loop.run(num_steps=num_trajectories * agent.config.unroll_length + 1)
  return environment

"""D4PG for ActorQ: Acme's TF learner, exported as a deterministic policy."""
import copy
from typing import Callable, List

import acme
import numpy as np
import reverb
import sonnet as snt
from acme import adders
from acme import datasets
from acme.adders import reverb as reverb_adders
from acme.agents.tf import actors as tf_actors
from acme.agents.tf.d4pg import learning
from acme.tf import networks as acme_networks
from acme.tf import variable_utils

from agents import interface
from agents import reverb_compat
from agents.d4pg import networks
from agents.d4pg.config import D4PGConfig
from quarl.actors import exploration as exploration_lib

REPLAY_TABLE = 'priority_table'


class D4PGAgent(interface.Agent):
  """Distributional DDPG with per-actor Gaussian exploration."""

  action_kind = 'continuous'
  exploration_name = 'sigma'
  config: D4PGConfig

  def _policy(self) -> snt.Module:
    return networks.make_policy_network(self.environment_spec.actions,
                                        self.config.policy_layers)

  def replay_tables(self) -> List[reverb.Table]:
    config = self.config
    signature = reverb_adders.NStepTransitionAdder.signature(
        self.environment_spec)
    if config.samples_per_insert is None:
      limiter = reverb.rate_limiters.MinSize(config.min_replay_size)
    else:
      limiter = reverb.rate_limiters.SampleToInsertRatio(
          min_size_to_sample=config.min_replay_size,
          samples_per_insert=config.samples_per_insert,
          # 10% tolerance around the target ratio, as Acme does.
          error_buffer=0.1 * config.min_replay_size * config.samples_per_insert)
    replay = reverb.Table(
        name=REPLAY_TABLE,
        sampler=reverb.selectors.Uniform(),
        remover=reverb.selectors.Fifo(),
        max_size=config.max_replay_size,
        rate_limiter=limiter,
        signature=signature)
    return [replay, interface.calibration_table(signature)]

  def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
    return reverb_adders.NStepTransitionAdder(
        client=reverb_compat.AdderClient(replay_client),
        n_step=self.config.n_step,
        discount=self.config.discount,
        priority_fns={REPLAY_TABLE: None, interface.CALIBRATION_TABLE: None})

  def make_learner(self, replay_client: reverb.Client, counter,
                   logger) -> interface.LearnerBundle:
    config = self.config
    spec = self.environment_spec
    policy = self._policy()
    critic = networks.make_critic_network(config.critic_layers, config.vmin,
                                          config.vmax, config.num_atoms)
    networks.create_variables(policy, spec.observations)
    networks.create_variables(critic, spec.observations, spec.actions)
    target_policy, target_critic = copy.deepcopy(policy), copy.deepcopy(critic)
    policy_optimizer = snt.optimizers.Adam(config.policy_learning_rate)
    critic_optimizer = snt.optimizers.Adam(config.critic_learning_rate)
    dataset = datasets.make_reverb_dataset(
        table=REPLAY_TABLE,
        server_address=replay_client.server_address,
        batch_size=config.batch_size,
        prefetch_size=4)
    learner = learning.D4PGLearner(
        policy_network=policy,
        critic_network=critic,
        target_policy_network=target_policy,
        target_critic_network=target_critic,
        discount=config.discount,
        target_update_period=config.target_update_period,
        dataset_iterator=iter(dataset),
        policy_optimizer=policy_optimizer,
        critic_optimizer=critic_optimizer,
        counter=counter,
        logger=logger,
        checkpoint=False)  # Checkpoints go under --run_dir, not ~/acme.
    return interface.LearnerBundle(
        learner=learner,
        checkpointables=dict(
            policy=policy, critic=critic, target_policy=target_policy,
            target_critic=target_critic, policy_optimizer=policy_optimizer,
            critic_optimizer=critic_optimizer),
        networks=[policy, critic],
        compressible_layers=networks.compressible_layers(policy, critic))

  def export_policy(self) -> snt.Module:
    policy = self._policy()
    networks.create_variables(policy, self.environment_spec.observations)
    return policy

  def make_tf_actor(self, variable_source: acme.VariableSource,
                    adder: adders.Adder, exploration: float) -> acme.Actor:
    policy = self.export_policy()
    layers = [policy]
    if exploration > 0:
      layers += [acme_networks.ClippedGaussian(exploration),
                 acme_networks.ClipToSpec(self.environment_spec.actions)]
    behaviour_network = snt.Sequential(layers)
    variable_client = variable_utils.VariableClient(
        variable_source, {'policy': policy.variables}, update_period=1000)
    variable_client.update_and_wait()
    return tf_actors.FeedForwardActor(behaviour_network, adder,
                                      variable_client)

  def exploration(self, actor_id: int, num_actors: int) -> float:
    return exploration_lib.sigma_ladder(actor_id, num_actors,
                                        self.config.sigma_min,
                                        self.config.sigma_max)

  def behaviour(self, exploration: float, rng: np.random.Generator
                ) -> Callable[[np.ndarray], np.ndarray]:
    return exploration_lib.gaussian_behaviour(
        exploration, self.environment_spec.actions, rng)

"""D4PG for ActorQ: Acme's TF learner, exported as a deterministic policy."""
import copy

import reverb
import sonnet as snt

from agents import deterministic
from agents import interface
from agents import replay
from agents.d4pg import networks
from agents.d4pg.config import D4PGConfig
from agents.d4pg.learning import D4PGLearner


class D4PGAgent(deterministic.DeterministicPolicyAgent):
  """Distributional DDPG with per-actor Gaussian exploration."""

  config: D4PGConfig

  def make_policy_network(self) -> snt.Module:
    return networks.make_policy_network(self.environment_spec.actions,
                                        self.config.policy_layers,
                                        self.config.policy_layer_norm)

  def make_learner(self, replay_client: reverb.Client, counter, logger,
                   compile_mode: str = 'xla',
                   dataset_parallel_calls: int = (
                       replay.DATASET_PARALLEL_CALLS)
                   ) -> interface.LearnerBundle:
    config = self.config
    spec = self.environment_spec
    policy = self.learner_policy()
    critic = networks.make_critic_network(config.critic_layers, config.vmin,
                                          config.vmax, config.num_atoms,
                                          config.critic_layer_norm)
    networks.create_variables(critic, spec.observations, spec.actions)
    target_policy, target_critic = copy.deepcopy(policy), copy.deepcopy(critic)
    policy_optimizer = snt.optimizers.Adam(config.policy_learning_rate)
    critic_optimizer = snt.optimizers.Adam(config.critic_learning_rate)
    learner = D4PGLearner(
        compile_mode=compile_mode,
        policy_network=policy,
        critic_network=critic,
        target_policy_network=target_policy,
        target_critic_network=target_critic,
        discount=config.discount,
        target_update_period=config.target_update_period,
        dataset_iterator=iter(self.replay_dataset(
            replay_client, dataset_parallel_calls)),
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

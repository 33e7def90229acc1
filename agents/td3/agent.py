"""TD3 for ActorQ and GST: our TF learner; actors get its online policy."""
import copy

import reverb
import sonnet as snt

from agents import deterministic
from agents import interface
from agents import replay
from agents.td3 import networks
from agents.td3.config import TD3Config
from agents.td3.learning import TD3Learner


class TD3Agent(deterministic.DeterministicPolicyAgent):
  """TD3 with per-actor Gaussian exploration and uniform 1-step replay."""

  config: TD3Config
  records_gradients = True

  def make_policy_network(self) -> snt.Module:
    return networks.make_policy_network(self.environment_spec.actions,
                                        self.config.policy_layers)

  def warmup_steps(self, num_actors: int) -> int:
    return self.config.random_warmup_steps // num_actors

  def make_critic_network(self) -> snt.Module:
    """A fresh critic with its variables created."""
    critic = networks.make_critic_network(self.config.critic_layers)
    spec = self.environment_spec
    networks.create_variables(critic, spec.observations, spec.actions)
    return critic

  def make_learner(self, replay_client: reverb.Client, counter, logger,
                   compile_mode: str = 'xla',
                   dataset_parallel_calls: int = (
                       replay.DATASET_PARALLEL_CALLS)
                   ) -> interface.LearnerBundle:
    """Targets are copies made before any controller touches the online
    networks, so they stay dense and are never registered for compression."""
    config = self.config
    policy = self.learner_policy()
    critics = (self.make_critic_network(), self.make_critic_network())
    learner = TD3Learner(
        policy_network=policy,
        critic_networks=critics,
        target_policy_network=copy.deepcopy(policy),
        target_critic_networks=copy.deepcopy(critics),
        action_spec=self.environment_spec.actions,
        dataset_iterator=iter(self.replay_dataset(
            replay_client, dataset_parallel_calls)),
        discount=config.discount,
        policy_optimizer=snt.optimizers.Adam(config.policy_learning_rate),
        critic_optimizer=snt.optimizers.Adam(config.critic_learning_rate),
        tau=config.tau,
        policy_update_period=config.policy_update_period,
        target_noise=config.target_noise,
        target_noise_clip=config.target_noise_clip,
        counter=counter,
        logger=logger,
        compile_mode=compile_mode)
    return interface.LearnerBundle(
        learner=learner,
        checkpointables=learner.state,
        networks=[policy, *critics],
        compressible_layers=networks.compressible_layers(policy, *critics))

"""A2C for ActorQ: an actor-critic whose logits int8 actors sample."""
import sonnet as snt
from acme.tf import utils as tf2_utils

from agents import onpolicy
from agents.a2c import networks
from agents.a2c.config import A2CConfig
from agents.a2c.learning import ActorCriticLearner


class A2CAgent(onpolicy.OnPolicyAgent):
  """Synchronous advantage actor-critic (Mnih et al. 2016's A2C form):
  each queued trajectory is used once."""

  config: A2CConfig
  records_gradients = True

  def network(self) -> networks.ActorCriticNetwork:
    network = networks.ActorCriticNetwork(
        self.environment_spec.observations.shape, self.num_actions,
        self.config.mlp_layers)
    tf2_utils.create_variables(network, [self.environment_spec.observations])
    return network

  def new_learner(self, **kwargs) -> ActorCriticLearner:
    return ActorCriticLearner(**kwargs)

  def make_optimizer(self) -> snt.Optimizer:
    return snt.optimizers.Adam(self.config.learning_rate,
                               epsilon=self.config.adam_epsilon)

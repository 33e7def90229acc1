"""DQN for ActorQ: Acme's TF learner, exported as the Q-network itself."""
from typing import Callable, List

import numpy as np
import reverb
import sonnet as snt
from acme.tf import utils as tf2_utils

from agents import interface
from agents import replay
from agents.dqn import networks
from agents.dqn.config import DQNConfig
from agents.dqn.learning import DQNLearner
from quarl.actors import exploration as exploration_lib

# Acme's DQNLearner writes its priority updates to this table name.
REPLAY_TABLE = replay.REPLAY_TABLE


class DQNAgent(interface.Agent):
  """Double DQN, prioritised N-step replay, Ape-X per-actor epsilons."""

  action_kind = 'discrete'
  config: DQNConfig

  @property
  def num_actions(self) -> int:
    return int(self.environment_spec.actions.num_values)

  def _q_network(self) -> snt.Module:
    network = networks.make_q_network(self.num_actions, self.config.q_layers)
    tf2_utils.create_variables(network, [self.environment_spec.observations])
    return network

  def replay_tables(self) -> List[reverb.Table]:
    return replay.transition_tables(
        self.environment_spec, self.config,
        reverb.selectors.Prioritized(self.config.priority_exponent))

  def make_learner(self, replay_client: reverb.Client, counter, logger,
                   compile_mode: str = 'xla',
                   dataset_parallel_calls: int = (
                       replay.DATASET_PARALLEL_CALLS)
                   ) -> interface.LearnerBundle:
    config = self.config
    network, target_network = self._q_network(), self._q_network()
    dataset = self.replay_dataset(replay_client, dataset_parallel_calls)
    learner = DQNLearner(
        compile_mode=compile_mode,
        network=network,
        target_network=target_network,
        discount=config.discount,
        importance_sampling_exponent=config.importance_sampling_exponent,
        learning_rate=config.learning_rate,
        target_update_period=config.target_update_period,
        dataset=dataset,
        # A plain reverb.Client: its mutate_priorities works on 0.7.2.
        replay_client=replay_client,
        counter=counter,
        logger=logger,
        checkpoint=False)  # Checkpoints go under --run_dir, not ~/acme.
    return interface.LearnerBundle(
        learner=learner,
        # network, target_network, optimizer (Adam moments) and num_steps.
        checkpointables=dict(learner.state),
        networks=[network],
        compressible_layers=network.compressible_layers)

  def export_policy(self) -> snt.Module:
    return self._q_network()

  def exploration(self, actor_id: int, num_actors: int) -> float:
    return exploration_lib.epsilon_ladder(actor_id, num_actors,
                                          self.config.epsilon_base,
                                          self.config.epsilon_alpha)

  def behaviour(self, exploration: float, rng: np.random.Generator,
                model_step: interface.ModelStep
                ) -> Callable[[np.ndarray], np.ndarray]:
    del model_step  # Replay data records no lag.
    return exploration_lib.epsilon_greedy_behaviour(
        exploration, self.num_actions, rng)

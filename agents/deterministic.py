"""The DDPG family (D4PG, TD3): what they share beyond the learner."""
import abc
from typing import Callable, List

import numpy as np
import reverb
import sonnet as snt
from acme.tf import utils as tf2_utils

from agents import interface
from agents import replay
from quarl.actors import exploration as exploration_lib


class DeterministicPolicyAgent(interface.Agent):
  """A deterministic tanh policy is exported to actors, each actor adds its
  own Gaussian sigma (configured in units of the action half-range), and
  transitions go to a uniform N-step table. Subclasses give the policy
  network and the learner; the config needs batch_size, n_step, discount,
  min/max_replay_size, samples_per_insert, sigma_min and sigma_max.
  """

  action_kind = 'continuous'

  @abc.abstractmethod
  def make_policy_network(self) -> snt.Module:
    """A fresh policy (variables not yet created)."""

  def replay_tables(self) -> List[reverb.Table]:
    return replay.transition_tables(self.environment_spec, self.config,
                                    reverb.selectors.Uniform())

  def learner_policy(self) -> snt.Module:
    """The learner's online policy (obs -> action in the spec), variables
    created."""
    policy = self.make_policy_network()
    tf2_utils.create_variables(policy, [self.environment_spec.observations])
    return policy

  def export_policy(self) -> snt.Module:
    """The policy up to its action head (pre-tanh), variables alike the
    learner's: tanh and the rescale run in float in behaviour(). Measured by
    benchmarks/squash_fidelity.py: the most faithful int8 export point, and
    the rescale's ranges, which collapse when the policy saturates, never
    reach LiteRT."""
    return self.learner_policy().body

  def model_postprocess(self, output: np.ndarray) -> np.ndarray:
    return exploration_lib.unit_to_spec(np.tanh(output),
                                        self.environment_spec.actions)

  def model_output_scale(self) -> np.ndarray:
    actions = self.environment_spec.actions
    return np.asarray(actions.maximum - actions.minimum, np.float32)

  def exploration(self, actor_id: int, num_actors: int) -> float:
    """The ladder is in units of the action half-range, as in the TD3 paper
    (noise 0.1 * max_action); actors get it in action units. Our tasks share
    one range across action dimensions, so its mean is that range."""
    actions = self.environment_spec.actions
    half_range = float(np.mean((actions.maximum - actions.minimum) / 2))
    return half_range * exploration_lib.sigma_ladder(
        actor_id, num_actors, self.config.sigma_min, self.config.sigma_max)

  def behaviour(self, exploration: float, rng: np.random.Generator,
                model_step: interface.ModelStep
                ) -> Callable[[np.ndarray], np.ndarray]:
    del model_step  # Replay data records no lag.
    return exploration_lib.gaussian_behaviour(
        exploration, self.environment_spec.actions, rng,
        self.model_postprocess)



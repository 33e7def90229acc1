"""What an algorithm supplies to the one program builder in `launch/`.

Every distributed program has the same nodes (replay, counter, learner,
quantizer, actors, evaluator); an agent only says what differs: its networks,
learner, replay tables and adder, the policy to export, and how actors explore.
"""
import abc
import dataclasses
from typing import Any, Callable, Dict, List, Sequence

import acme
import numpy as np
import reverb
import sonnet as snt
from acme import adders
from acme import specs

# Reverb table that mirrors recent transitions (FIFO) for int8 calibration, so
# the quantizer never samples from (and rate-limits) the learner's table.
CALIBRATION_TABLE = 'calibration'
CALIBRATION_TABLE_SIZE = 2048


def calibration_table(signature) -> reverb.Table:
  return reverb.Table(
      name=CALIBRATION_TABLE,
      sampler=reverb.selectors.Uniform(),
      remover=reverb.selectors.Fifo(),
      max_size=CALIBRATION_TABLE_SIZE,
      rate_limiter=reverb.rate_limiters.MinSize(1),
      signature=signature)


@dataclasses.dataclass
class LearnerBundle:
  """A learner plus what a checkpoint must hold to resume it."""
  learner: acme.Learner
  checkpointables: Dict[str, Any]
  # The online networks (target copies excluded: controllers must not own
  # them) and the hidden layers a compression controller may rewrite.
  networks: List[snt.Module] = dataclasses.field(default_factory=list)
  compressible_layers: List[Any] = dataclasses.field(default_factory=list)


class Agent(abc.ABC):
  """One algorithm's pieces for a distributed ActorQ program."""

  # 'continuous' or 'discrete': checked against the environment up front.
  action_kind: str
  # Name of the per-actor exploration knob in actors.csv ('sigma', 'epsilon').
  exploration_name: str

  def __init__(self, environment_spec: specs.EnvironmentSpec, config):
    self.environment_spec = environment_spec
    self.config = config

  @property
  def observation_size(self) -> int:
    return int(np.prod(self.environment_spec.observations.shape))

  @abc.abstractmethod
  def replay_tables(self) -> List[reverb.Table]:
    """The learner's table(s) and the calibration table."""

  @abc.abstractmethod
  def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
    """Adder writing actor transitions to every table in replay_tables()."""

  @abc.abstractmethod
  def make_learner(self, replay_client: reverb.Client, counter,
                   logger) -> LearnerBundle:
    """A learner whose get_variables(['policy']) feeds export_policy()."""

  @abc.abstractmethod
  def export_policy(self) -> snt.Module:
    """Fresh deterministic network (obs -> action or Q-values), variables in
    the same order as the learner's 'policy' variables."""

  @abc.abstractmethod
  def make_tf_actor(self, variable_source: acme.VariableSource,
                    adder: adders.Adder, exploration: float) -> acme.Actor:
    """The stock Acme TF actor (fp32_tf baseline); exploration=0 is greedy."""

  @abc.abstractmethod
  def exploration(self, actor_id: int, num_actors: int) -> float:
    """Actor i's own exploration level (sigma or epsilon)."""

  @abc.abstractmethod
  def behaviour(self, exploration: float, rng: np.random.Generator
                ) -> Callable[[np.ndarray], np.ndarray]:
    """Exported-model output -> action, exploring at `exploration`."""

  def greedy(self) -> Callable[[np.ndarray], np.ndarray]:
    return self.behaviour(0.0, np.random.default_rng(0))


def observations_from_transitions(samples: Sequence) -> np.ndarray:
  """Flat float32 observations out of Reverb transition samples.

  Samples read with emit_timesteps=False hold the flattened Transition
  (observation, action, reward, discount, next_observation, ...); our
  environments have one flat observation array, so it is field 0.
  """
  return np.stack([np.asarray(s.data[0], np.float32).reshape(-1)
                   for s in samples])

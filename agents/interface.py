"""What an algorithm supplies to the one program builder in `launch/`.

Every distributed program has the same nodes (replay, counter, learner,
quantizer, actors, evaluator); an agent only says what differs: its networks,
learner, replay tables and adder, the policy to export, and how actors explore.
"""
import abc
import dataclasses
from typing import Any, Callable, Dict, List, Optional

import acme
import numpy as np
import reverb
import sonnet as snt
import tensorflow as tf
from acme import adders
from acme import datasets
from acme import specs
from acme.adders import reverb as reverb_adders
from acme.agents.tf import actors as tf_actors
from acme.tf import utils as tf2_utils
from acme.tf import variable_utils

from agents import reverb_compat
from quarl.actors import exploration as exploration_lib

# The learner's uniform N-step transition table (Acme's default name).
REPLAY_TABLE = reverb_adders.DEFAULT_PRIORITY_TABLE

# Reverb table that mirrors recent transitions (FIFO) for int8 calibration, so
# the quantizer never samples from (and rate-limits) the learner's table.
CALIBRATION_TABLE = 'calibration'
CALIBRATION_TABLE_SIZE = 2048
DATASET_PARALLEL_CALLS = 2
# get_variables name of the learner's step count, served beside 'policy' by
# learners that stamp their models with it (on-policy agents: the lag).
LEARNER_STEP = 'learner_step'


def calibration_table(signature,
                      max_size: int = CALIBRATION_TABLE_SIZE) -> reverb.Table:
  return reverb.Table(
      name=CALIBRATION_TABLE,
      sampler=reverb.selectors.Uniform(),
      remover=reverb.selectors.Fifo(),
      max_size=max_size,
      rate_limiter=reverb.rate_limiters.MinSize(1),
      signature=signature)


def rate_limiter(min_replay_size: int, samples_per_insert: Optional[float]
                 ) -> reverb.rate_limiters.RateLimiter:
  """The learner table's limiter: learn after `min_replay_size` inserts and,
  unless `samples_per_insert` is None, hold actors to that replay ratio (with
  Acme's 10% tolerance) so they cannot starve the learner of CPU."""
  if samples_per_insert is None:
    return reverb.rate_limiters.MinSize(min_replay_size)
  return reverb.rate_limiters.SampleToInsertRatio(
      min_size_to_sample=min_replay_size,
      samples_per_insert=samples_per_insert,
      error_buffer=0.1 * min_replay_size * samples_per_insert)


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
  # 'vector' (flat float32) or 'pixel' (uint8 frame stacks): what the
  # networks take, checked against the environment up front too.
  observation_kind = 'vector'
  # On-policy agents learn from trajectories of the acting policy (a queue,
  # not a replay): their actors stamp the data with the learner step of the
  # model they act with, and behaviour() takes that step's source.
  on_policy = False
  # Observations one calibration-table item holds (a transition: one).
  observations_per_item = 1

  def __init__(self, environment_spec: specs.EnvironmentSpec, config):
    self.environment_spec = environment_spec
    self.config = config

  @property
  def observation_size(self) -> int:
    return int(np.prod(self.environment_spec.observations.shape))

  @abc.abstractmethod
  def replay_tables(self) -> List[reverb.Table]:
    """The learner's table(s) and the calibration table."""

  def make_adder(self, replay_client: reverb.Client) -> adders.Adder:
    """N-step transitions (config.n_step, config.discount) into the
    learner's table (new items at priority 1) and the calibration table."""
    return reverb_adders.NStepTransitionAdder(
        client=reverb_compat.AdderClient(replay_client),
        n_step=self.config.n_step,
        discount=self.config.discount,
        priority_fns={REPLAY_TABLE: None, CALIBRATION_TABLE: None})

  def replay_dataset(self, replay_client: reverb.Client,
                     parallel_calls: int = DATASET_PARALLEL_CALLS
                     ) -> tf.data.Dataset:
    """Batches of N-step transitions (reverb.ReplaySample) for the learner,
    sampled by `parallel_calls` workers (Acme's default of 12 oversubscribes
    small machines; launch/nodes/threads.py sizes it)."""
    return datasets.make_reverb_dataset(
        table=REPLAY_TABLE,
        server_address=replay_client.server_address,
        batch_size=self.config.batch_size,
        prefetch_size=4,
        num_parallel_calls=parallel_calls)

  @abc.abstractmethod
  def make_learner(self, replay_client: reverb.Client, counter, logger,
                   compile_mode: str = 'xla',
                   dataset_parallel_calls: int = DATASET_PARALLEL_CALLS
                   ) -> LearnerBundle:
    """A learner whose get_variables(['policy']) feeds export_policy(); its
    step compiles as `compile_mode` (agents/compiled.py)."""

  @abc.abstractmethod
  def export_policy(self) -> snt.Module:
    """Fresh deterministic network (obs -> action or Q-values), variables in
    the same order as the learner's 'policy' variables."""

  def make_tf_actor(self, variable_source: acme.VariableSource,
                    adder: Optional[adders.Adder], exploration: float,
                    rng: np.random.Generator,
                    variable_update_period: int = 1000) -> acme.Actor:
    """The stock Acme TF actor (fp32_tf baseline); exploration=0 is greedy.

    It runs the same exported model as the LiteRT actors, in TF, and explores
    through the same behaviour(): the baseline differs in precision only.
    It pulls the learner's variables every `variable_update_period` calls to
    update() (Acme's default: every 1000 env steps); the evaluator asks for
    every call, since it updates once per evaluation.
    """
    policy = self.export_policy()
    variable_client = variable_utils.VariableClient(
        variable_source, {'policy': policy.variables},
        update_period=variable_update_period)
    variable_client.update_and_wait()
    return TFBehaviourActor(policy, adder, variable_client,
                            self.behaviour(exploration, rng))

  def calibration_observations(self, replay_client: reverb.Client,
                               num_observations: int
                               ) -> Optional[np.ndarray]:
    """At least `num_observations` flat float32 observations drawn from the
    calibration table (with replacement), or None while it holds fewer items
    than that takes."""
    num_items = -(-num_observations // self.observations_per_item)
    info = replay_client.server_info()[CALIBRATION_TABLE]
    if info.current_size < num_items:
      return None
    samples = replay_client.sample(CALIBRATION_TABLE, num_samples=num_items,
                                   emit_timesteps=False)
    # Field 0 of a flattened transition or sequence item is its observation
    # (one, or one per step).
    return np.concatenate([
        np.asarray(s.data[0], np.float32).reshape(-1, self.observation_size)
        for s in samples])

  def model_postprocess(self, output: np.ndarray) -> np.ndarray:
    """The float step from the exported model's output to what the greedy
    actor acts on (identity: the output itself, e.g. Q-values)."""
    return output

  def model_output_scale(self) -> Optional[np.ndarray]:
    """Divisor for the quantizer's relative errors (None: the spread of the
    fp32 outputs)."""
    return None

  @abc.abstractmethod
  def exploration(self, actor_id: int, num_actors: int) -> float:
    """Actor i's own exploration level (sigma or epsilon)."""

  @abc.abstractmethod
  def behaviour(self, exploration: float, rng: np.random.Generator
                ) -> Callable[[np.ndarray], Any]:
    """Exported-model output -> action, exploring at `exploration`; or
    (action, extras) for agents whose replay records extras beside it."""

  def warmup_steps(self, num_actors: int) -> int:
    """Uniform-random actions each actor takes first (0: none)."""
    del num_actors
    return 0

  @staticmethod
  def learner_steps(config, actor_steps: int) -> int:
    """Learner steps a run of `actor_steps` env steps makes, what schedules
    given as fractions of a budget resolve against: replay agents learn after
    min_replay_size inserts at samples_per_insert / batch_size steps per
    insert."""
    if config.samples_per_insert is None:
      raise ValueError('a schedule in fractions of the budget needs a replay '
                       'ratio (samples_per_insert), which this run has not')
    return int(max(0, actor_steps - config.min_replay_size) *
               config.samples_per_insert / config.batch_size)


class DeterministicPolicyAgent(Agent):
  """The DDPG family (D4PG, TD3): what they share beyond the learner.

  A deterministic tanh policy is exported to actors, each actor adds its own
  Gaussian sigma (configured in units of the action half-range), and
  transitions go to a uniform N-step table. Subclasses give the policy network and the learner; the config
  needs batch_size, n_step, discount, min/max_replay_size,
  samples_per_insert, sigma_min and sigma_max.
  """

  action_kind = 'continuous'

  @abc.abstractmethod
  def make_policy_network(self) -> snt.Module:
    """A fresh policy (variables not yet created)."""

  def replay_tables(self) -> List[reverb.Table]:
    config = self.config
    signature = reverb_adders.NStepTransitionAdder.signature(
        self.environment_spec)
    replay = reverb.Table(
        name=REPLAY_TABLE,
        sampler=reverb.selectors.Uniform(),
        remover=reverb.selectors.Fifo(),
        max_size=config.max_replay_size,
        rate_limiter=rate_limiter(config.min_replay_size,
                                  config.samples_per_insert),
        signature=signature)
    return [replay, calibration_table(signature)]

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

  def behaviour(self, exploration: float, rng: np.random.Generator
                ) -> Callable[[np.ndarray], np.ndarray]:
    return exploration_lib.gaussian_behaviour(
        exploration, self.environment_spec.actions, rng,
        self.model_postprocess)


class TFBehaviourActor(tf_actors.FeedForwardActor):
  """Acme's TF actor on the exported model, acting through behaviour().

  A behaviour that returns (action, extras) has the extras added beside the
  action (quarl.actors.exploration.split_decision).
  """

  def __init__(self, policy, adder, variable_client, behaviour):
    super().__init__(policy, adder, variable_client)
    self._behaviour = behaviour
    self._extras = ()

  def select_action(self, observation: np.ndarray) -> np.ndarray:
    action, self._extras = exploration_lib.split_decision(
        self._behaviour(super().select_action(observation)))
    return action

  def observe(self, action: np.ndarray, next_timestep) -> None:
    if self._adder:
      self._adder.add(action, next_timestep, self._extras)

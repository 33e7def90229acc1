"""What an algorithm supplies to the one program builder in `launch/`.

Every distributed program has the same nodes (replay, counter, learner,
quantizer, actors, evaluator); an agent only says what differs: its networks,
learner, replay tables and adder, the policy to export, and how actors explore.
Its siblings hold the shared pieces: agents/replay.py (tables, adders,
datasets), agents/deterministic.py (the DDPG family), agents/onpolicy.py
(A2C, PPO) and agents/tf_actor.py (the stock TF actor).
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
from acme import specs
from acme.tf import variable_utils

from agents import packed_transitions
from agents import replay
from agents import tf_actor

# get_variables name of the learner's step count, served beside 'policy' by
# learners that stamp their models with it (on-policy agents: the lag).
LEARNER_STEP = 'learner_step'
# () -> the learner step of the model an actor acts with (-1: unknown).
ModelStep = Callable[[], int]


def unknown_model_step() -> int:
  return -1


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
  # Of 'vector' (flat float32) and 'pixel' (uint8 frame stacks): what the
  # networks take, checked against the environment up front too.
  observation_kinds = ('vector',)
  # On-policy agents learn from trajectories of the acting policy (a queue,
  # not a replay) and stamp them with the acting model's learner step, which
  # their learners serve exactly (LEARNER_STEP) for the quantizer to record.
  on_policy = False
  # Whether the learner hands its dense gradients to the compression
  # controller (agents/compiled.py), as RigL's regrowth needs.
  records_gradients = False
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
    learner's table and the calibration table."""
    return replay.transition_adder(replay_client, self.environment_spec,
                                   self.config.n_step, self.config.discount)

  def replay_dataset(self, replay_client: reverb.Client,
                     parallel_calls: int = replay.DATASET_PARALLEL_CALLS
                     ) -> tf.data.Dataset:
    """Batches of N-step transitions for the learner, sampled by
    `parallel_calls` workers."""
    return replay.transition_dataset(replay_client, self.environment_spec,
                                     self.config.batch_size, parallel_calls)

  @abc.abstractmethod
  def make_learner(self, replay_client: reverb.Client, counter, logger,
                   compile_mode: str = 'xla',
                   dataset_parallel_calls: int = (
                       replay.DATASET_PARALLEL_CALLS)
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
    return tf_actor.TFBehaviourActor(
        policy, adder, variable_client,
        self.behaviour(exploration, rng, unknown_model_step))

  def calibration_observations(self, replay_client: reverb.Client,
                               num_observations: int
                               ) -> Optional[np.ndarray]:
    """At least `num_observations` flat float32 observations drawn from the
    calibration table (with replacement), or None while it holds fewer items
    than that takes."""
    num_items = -(-num_observations // self.observations_per_item)
    info = replay_client.server_info()[replay.CALIBRATION_TABLE]
    if info.current_size < num_items:
      return None
    samples = replay_client.sample(replay.CALIBRATION_TABLE,
                                   num_samples=num_items,
                                   emit_timesteps=False)
    return self.item_observations(np.stack([s.data[0] for s in samples]))

  def item_observations(self, items: np.ndarray) -> np.ndarray:
    """Calibration items' observations as rows of flat float32: each packed
    transition's first observation."""
    return packed_transitions.Layout(self.environment_spec).observations(
        items).reshape(-1, self.observation_size)

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
  def behaviour(self, exploration: float, rng: np.random.Generator,
                model_step: ModelStep) -> Callable[[np.ndarray], Any]:
    """Exported-model output -> action, exploring at `exploration`; or
    (action, extras) for agents whose replay records extras beside it
    (on-policy agents stamp each step with `model_step()`)."""

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

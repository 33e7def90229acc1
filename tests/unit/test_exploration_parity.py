"""fp32_tf and LiteRT actors explore through the same behaviour().

Issue 9: the fp32_tf baseline explored through Acme's ClippedGaussian,
which clips to [-1, 1] whatever the action spec; on Pendulum (torque in
[-2, 2]) it explored half the range the LiteRT actors used.
"""
import numpy as np
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks

from agents import interface
from agents.d4pg import AGENT_CLASS
from agents.d4pg import config_for_env
from quarl.quantization.calibration import rollout_observations
from quarl import actors
from quarl import envs
from quarl import quantization

SAMPLES = 3000


class _Source:
  """The learner's get_variables contract over a fixed set of weights."""

  def __init__(self, variables):
    self._values = [v.numpy() for v in variables]

  def get_variables(self, names):
    return [self._values for _ in names]


def test_both_actor_kinds_explore_the_whole_pendulum_range_alike():
  environment = envs.make_environment('gym:Pendulum-v1', 0)
  agent = AGENT_CLASS(specs.make_environment_spec(environment),
                      config_for_env('gym:Pendulum-v1',
                                     policy_layers=(32, 32, 32)))
  export = agent.export_policy()
  head = next(m for m in export.submodules
              if isinstance(m, acme_networks.NearZeroInitializedLinear))
  head.b.assign([0.3])  # A greedy torque of ~0.58: off-centre, unsaturated.
  observations = rollout_observations(environment, 100,
                                      np.random.default_rng(0))
  model = quantization.convert_policy(export, export.variables,
                                      agent.observation_size, 'int8',
                                      observations)
  sigma = agent.exploration(0, 4)  # The widest actor of four.
  assert sigma == 1.0  # 0.5 of Pendulum's half-range of 2.

  tf_actor = agent.make_tf_actor(_Source(export.variables), None, sigma,
                                 np.random.default_rng(1))
  refresher = actors.ModelRefresher(
      lambda known: (0, model.model_bytes, 0) if known < 0 else None)
  assert refresher.refresh_once()
  litert_actor = actors.LiteRTActor(
      refresher, agent.behaviour(sigma, np.random.default_rng(2),
                                 interface.unknown_model_step))
  observation = observations[0]
  kinds = {name: np.array([actor.select_action(observation)[0]
                           for _ in range(SAMPLES)])
           for name, actor in (('fp32_tf', tf_actor),
                               ('litert', litert_actor))}
  refresher.stop()
  greedy = agent.model_postprocess(export(tf.constant(observation[None]))
                                   .numpy())[0, 0]
  for name, taken in kinds.items():
    assert taken.min() < -1.5 and taken.max() > 1.5, name
    assert taken.min() >= -2.0 and taken.max() <= 2.0, name
    assert abs(np.mean(taken) - greedy) < 0.15, name  # Clipping skews a bit.
  a, b = kinds['fp32_tf'], kinds['litert']
  standard_error = np.sqrt(a.var() / SAMPLES + b.var() / SAMPLES)
  assert abs(a.mean() - b.mean()) < 4 * standard_error
  assert abs(a.std() / b.std() - 1.0) < 0.1

"""Actors' int8 models keep the layers that meet the world in float.

One int8 scale for a whole observation vector rounds its small dimensions
away when another is wide (a trained Pendulum policy: the angle's cos/sin
beside an angular velocity of +-7). quantization/float_ends.py keeps the
input block and the output layer in float and the hidden layers in int8.
"""
import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf
from acme import specs
from tensorflow.lite.python import schema_py_generated as schema

from agents.d4pg import networks
from quarl import envs
from quarl import quantization
from quarl.quantization.calibration import rollout_observations

_OPS = schema.BuiltinOperator


def _weighted_layer_types(model_bytes):
  """Per FULLY_CONNECTED / CONV_2D in execution order: its weights' type."""
  model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(
      model_bytes, 0))
  graph = model.subgraphs[0]
  names = {schema.TensorType.INT8: 'int8', schema.TensorType.FLOAT32: 'float'}
  return [names[graph.tensors[op.inputs[1]].type]
          for op in graph.operators
          if max(model.operatorCodes[op.opcodeIndex].builtinCode,
                 model.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode)
          in (_OPS.FULLY_CONNECTED, _OPS.CONV_2D)]


@pytest.fixture(scope='module')
def pendulum():
  environment = envs.make_environment('gym:Pendulum-v1', 0)
  observations = rollout_observations(environment, 320,
                                      np.random.default_rng(0))
  return environment, observations[:256], observations[256:]


@pytest.mark.parametrize('layer_norm', [True, False])
def test_d4pg_policy_has_float_ends_and_int8_hidden_layers(pendulum,
                                                           layer_norm):
  environment, calibration, held = pendulum
  spec = specs.make_environment_spec(environment)
  policy = networks.make_policy_network(spec.actions, [64, 64, 64],
                                             layer_norm)
  policy(tf.constant(calibration[:1]))
  model = quantization.convert_policy(policy.body, policy.variables, 3,
                                      'int8', calibration, held)
  assert _weighted_layer_types(model.model_bytes) == [
      'float', 'int8', 'int8', 'float']
  everything = quantization.convert_policy(policy.body, policy.variables, 3,
                                           'int8_all', calibration, held)
  assert _weighted_layer_types(everything.model_bytes) == ['int8'] * 4


def test_a_model_without_a_hidden_layer_stays_all_int8(pendulum):
  _, calibration, held = pendulum
  network = snt.nets.MLP([32, 1])
  network(tf.constant(calibration[:1]))
  model = quantization.convert_policy(network, network.variables, 3, 'int8',
                                      calibration, held)
  assert _weighted_layer_types(model.model_bytes) == ['int8', 'int8']


def test_a_narrow_input_dimension_survives_a_wide_neighbour():
  """The output follows dimension 0 (+-0.05) while dimension 1 spans +-8:
  one int8 scale (steps of 16/255) rounds dimension 0 to 0 or one step."""
  rng = np.random.default_rng(0)
  observations = np.stack([rng.uniform(-0.05, 0.05, 400),
                           rng.uniform(-8, 8, 400)], axis=1).astype(np.float32)
  tf.random.set_seed(0)
  network = snt.nets.MLP([64, 64, 1])
  network(tf.constant(observations[:1]))
  first = [
      m for m in network.submodules if isinstance(m, snt.Linear)][0]
  first.w.assign(first.w * np.array([[40.0], [0.01]], np.float32))
  calibration, held = observations[:256], observations[256:]
  spread = float(np.ptp(network(tf.constant(held)).numpy()))
  ends, everything = (quantization.convert_policy(
      network, network.variables, 2, precision, calibration, held,
      output_scale=spread) for precision in ('int8', 'int8_all'))
  assert everything.p95_rel_err > 0.1
  assert ends.p95_rel_err < everything.p95_rel_err / 10

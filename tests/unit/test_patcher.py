"""Patched publishes equal fresh TF 2.8 conversions of the same weights.

The oracle reads both flatbuffers through the schema's object API (the
patcher uses views into the bytes) and runs both in a ModelProbe child.
"""
import importlib

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf
from acme import specs
from tensorflow.lite.python import schema_py_generated as schema

from agents import a2c
from quarl.quantization.calibration import rollout_observations
from quarl import compression
from quarl import envs
from quarl import litert
from quarl import quantization

# What each agent exports (D4PG: Linear-LayerNorm-tanh torso then a ReLU
# MLP; TD3 and DQN: ReLU MLPs), at its default size, on a task of its kind.
AGENTS = {'d4pg': 'gym:Pendulum-v1', 'td3': 'gym:Pendulum-v1',
          'dqn': 'gym:CartPole-v1'}
# A2C's (and PPO's) export: the Nature CNN and a linear head, on pixels; its
# compressible convs and dense layer as GST leaves them in each phase.
CNN_GAME = 'ale:Breakout'
CNN_PHASES = ('dense', 'circulant', 'sparse')


@pytest.fixture(scope='module')
def probe():
  model_probe = litert.ModelProbe()
  yield model_probe
  model_probe.close()


def _setup(kind):
  """(exported network, its output layer, calibration obs, held obs)."""
  env_name = AGENTS[kind]
  package = importlib.import_module(f'agents.{kind}')
  tf.random.set_seed(0)  # The initial weights.
  environment = envs.make_environment(env_name, 0)
  spec = specs.make_environment_spec(environment)
  network = package.AGENT_CLASS(
      spec, package.config_for_env(env_name)).export_policy()
  outputs = network(tf.zeros((1,) + spec.observations.shape)).shape[-1]
  head = next(m for m in network.submodules
              if isinstance(m, snt.Linear) and m.output_size == outputs)
  observations = rollout_observations(environment, 320,
                                      np.random.default_rng(0))
  return network, head, observations[:256], observations[256:]


def _perturb(rng):
  def change(network, head, calibration):
    del head, calibration
    for variable in network.trainable_variables:
      spread = max(float(np.std(variable.numpy())), 0.05)
      variable.assign_add(
          rng.normal(0, 0.1 * spread, variable.shape).astype(np.float32))
  return change


def _first_compressible(network):
  """The first hidden->hidden layer, which GST compresses."""
  return next(m for m in network.submodules
              if isinstance(m, compression.CompressibleLinear))


def _unchanged(network, head, calibration):
  """Still as initialised: all-zero biases, which TFLite drops."""
  del network, head, calibration


def _prune_hidden(network, head, calibration):
  """GST's sparse phase: 90% of a hidden kernel's blocks exactly zero."""
  del head, calibration
  hidden = _first_compressible(network)
  hidden.to_sparse(0.9)
  assert np.mean(hidden.w.numpy() == 0) >= 0.89


def _saturate_head(network, head, calibration):
  """Pre-activations far below zero on every observation (tanh pinned at
  -1, or one Q-value far below the others)."""
  head.w.assign(head.w * 100.0)
  outputs = network(tf.constant(calibration)).numpy()
  head.b.assign(head.b - (outputs.max() + 60.0))


def _tiny_head_big_bias(network, head, calibration):
  """A bias too large for int32 at input_scale * weight_scale: TF 2.8
  enlarges the stored weight scale and keeps the old int8 weights."""
  del network, calibration
  head.w.assign(np.random.default_rng(1).normal(
      0, 1e-4, head.w.shape).astype(np.float32))
  head.b.assign(np.full(head.b.shape, 30.0, np.float32))


def _huge_head_bias(network, head, calibration):
  """So large a bias moves the weight scale by more than 1e-3: TF 2.8 then
  requantizes the weights at the new scale."""
  del network, calibration
  head.b.assign(np.full(head.b.shape, 1e6, np.float32))


def _dead_hidden_layer(network, head, calibration):
  """A hidden ReLU layer that outputs zeros on every observation: its range
  is widened to [-1e-6, 1e-6], and the next layer's bias scale collapses."""
  del head, calibration
  hidden = _first_compressible(network)
  hidden.b.assign(np.full(hidden.b.shape, -1e3, np.float32))


def _operators(model_bytes):
  """Per operator, in execution order: its builtin code, and per input and
  output None (absent) or (tensor, constant data or None)."""
  model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model_bytes,
                                                                0))
  graph = model.subgraphs[0]
  operators = []
  for op in graph.operators:
    code = model.operatorCodes[op.opcodeIndex]
    operands = [None if index < 0 else
                (graph.tensors[index],
                 model.buffers[graph.tensors[index].buffer].data)
                for index in list(op.inputs) + list(op.outputs)]
    operators.append((max(code.builtinCode, code.deprecatedBuiltinCode),
                      operands))
  return operators


def _params(tensor):
  quantization = tensor.quantization
  if quantization is None or quantization.scale is None:
    return np.zeros(0), np.zeros(0)
  return quantization.scale, quantization.zeroPoint


_TYPES = {schema.TensorType.INT8: np.int8,
          schema.TensorType.INT32: np.int32,
          schema.TensorType.FLOAT32: np.float32}


def _output_step(operators):
  """One step of the last int8 tensor, carried through the float layers
  after it (quantization/float_ends.py keeps the output layer in float)."""
  dequantize = max(i for i, (code, _) in enumerate(operators)
                   if code == schema.BuiltinOperator.DEQUANTIZE)
  step = float(_params(operators[dequantize][1][0][0])[0][0])
  for code, operands in operators[dequantize + 1:]:
    if code == schema.BuiltinOperator.FULLY_CONNECTED:
      tensor, data = operands[1]
      weights = data.view(np.float32).reshape(tensor.shape)
      step *= float(np.max(np.sum(np.abs(weights), axis=1)))
  return step


def assert_same_int8_model(patched, fresh, held, probe):
  """Operator by operator: every scale within 1e-5 relative, zero points,
  int8 and float weights equal, int32 biases equal up to that scale
  tolerance (a bias TFLite dropped for being all zero must be all zero); and
  outputs within one step of the last int8 tensor as the float layers after
  it carry it (plus what the scale tolerance allows over the 255 steps of
  the range)."""
  ours, theirs = _operators(patched), _operators(fresh)
  assert [code for code, _ in ours] == [code for code, _ in theirs]
  for (_, our_operands), (_, their_operands) in zip(ours, theirs):
    for mine, expected in zip(our_operands, their_operands):
      if expected is None:
        assert not np.any(mine[1])
        continue
      (tensor, data), (expected_tensor, expected_data) = mine, expected
      assert tensor.type == expected_tensor.type
      (scales, zero_points), (expected_scales, expected_zero_points) = (
          _params(tensor), _params(expected_tensor))
      np.testing.assert_allclose(scales, expected_scales, rtol=1e-5)
      np.testing.assert_array_equal(zero_points, expected_zero_points)
      if expected_data is None:
        continue
      dtype = _TYPES[expected_tensor.type]
      data, expected_data = data.view(dtype), expected_data.view(dtype)
      if dtype == np.int32:
        np.testing.assert_allclose(data, expected_data, rtol=1e-5, atol=1)
      else:
        np.testing.assert_array_equal(data, expected_data)
  step = _output_step(theirs)
  outputs, expected_outputs = probe.run(patched, held), probe.run(fresh, held)
  assert np.max(np.abs(outputs - expected_outputs)) <= step * (1 + 255e-5)


def _patched_and_fresh(network, head, calibration, held, precision, changes,
                       probe, rng, calibration_size=None):
  """After a first, converted publish: per change, (patched, fresh) models
  of the changed network, the patched one's route checked; with
  `calibration_size`, fresh calibration data each time, as from replay."""
  observation_size = calibration.shape[1]
  publisher = quantization.PolicyPublisher(network, observation_size,
                                           precision, probe=probe)
  before = [v.numpy() for v in network.variables]
  assert publisher.publish(calibration, held).route == 'converted'
  # The template came from stand-in weights; the network's are restored.
  for variable, value in zip(network.variables, before):
    np.testing.assert_array_equal(variable.numpy(), value)
  pairs = []
  for change in changes:
    change(network, head, calibration)
    if calibration_size:
      calibration = calibration[rng.permutation(len(calibration))][
          :calibration_size]
    patched = publisher.publish(calibration, held)
    fresh = quantization.convert_policy(network, network.variables,
                                        observation_size, precision,
                                        calibration, held, probe=probe)
    assert patched.route == 'patched', change.__name__
    pairs.append((patched, fresh))
  return pairs


@pytest.mark.parametrize('kind', sorted(AGENTS))
def test_patched_int8_equals_a_fresh_conversion(kind, probe):
  network, head, calibration, held = _setup(kind)
  rng = np.random.default_rng(0)
  changes = [_unchanged, _perturb(rng), _perturb(rng), _prune_hidden,
             _saturate_head, _perturb(rng), _tiny_head_big_bias,
             _huge_head_bias, _perturb(rng), _dead_hidden_layer]
  pairs = _patched_and_fresh(network, head, calibration, held, 'int8',
                             changes, probe, rng, calibration_size=200)
  for patched, fresh in pairs:
    assert_same_int8_model(patched.model_bytes, fresh.model_bytes, held,
                           probe)


@pytest.mark.parametrize('kind', ['d4pg', 'dqn'])
def test_patched_fp32_is_the_fresh_conversion_byte_for_byte(kind, probe):
  network, head, calibration, held = _setup(kind)
  rng = np.random.default_rng(0)
  pairs = _patched_and_fresh(network, head, calibration, held, 'fp32',
                             [_perturb(rng)] * 2, probe, rng)
  for patched, fresh in pairs:
    assert patched.model_bytes == fresh.model_bytes
    assert patched.max_abs_err <= 1e-5


@pytest.fixture(scope='module')
def breakout():
  """(environment spec, 40 Breakout frames as flat floats): 32 to calibrate
  on and 8 held out, few so that each conversion stays short."""
  environment = envs.make_environment(CNN_GAME, 0)
  frames = rollout_observations(environment, 40, np.random.default_rng(0))
  return specs.make_environment_spec(environment), frames


def _compressible(network):
  return [m for m in network.submodules
          if isinstance(m, compression.CompressibleKernel)]


def _cnn_setup(breakout, phase):
  """(A2C's exported policy with GST's layers in `phase`, its output layer,
  calibration frames, held frames)."""
  spec, frames = breakout
  tf.random.set_seed(0)
  network = a2c.AGENT_CLASS(spec, a2c.config_for_env(CNN_GAME)
                            ).export_policy()
  for layer in _compressible(network):
    if phase == 'circulant':
      layer.to_circulant(4)
    elif phase == 'sparse':
      layer.to_sparse(0.9)
  actions = spec.actions.num_values
  head = next(m for m in network.submodules
              if isinstance(m, snt.Linear) and m.output_size == actions)
  return network, head, frames[:32], frames[32:]


def _constrained(change):
  """`change`, then each GST layer's structure re-imposed, as the learner
  does after every step."""
  def constrained_change(network, head, calibration):
    change(network, head, calibration)
    for layer in _compressible(network):
      layer.apply_constraint()
  return constrained_change


def _zero_conv_channel(network, head, calibration):
  """A conv output channel pruned whole: TF 2.8 widens its range to +-5e-7,
  a scale of 1e-6 / 254."""
  del head, calibration
  conv = [m for m in _compressible(network) if isinstance(m, snt.Conv2D)][0]
  kernel = conv.w.numpy()
  kernel[..., 0] = 0.0
  conv.w.assign(kernel)


def _huge_conv_bias(network, head, calibration):
  """One conv channel's bias too large for int32 at its per-channel scale:
  TF 2.8 enlarges that channel's scales and requantizes its weights."""
  del head, calibration
  conv = [m for m in _compressible(network) if isinstance(m, snt.Conv2D)][-1]
  bias = conv.b.numpy()
  bias[3] = 1e4
  conv.b.assign(bias)


@pytest.mark.parametrize('phase', CNN_PHASES)
def test_patched_int8_cnn_equals_a_fresh_conversion(phase, breakout, probe):
  network, head, calibration, held = _cnn_setup(breakout, phase)
  rng = np.random.default_rng(0)
  changes = [_unchanged, _constrained(_perturb(rng)), _zero_conv_channel,
             _huge_conv_bias, _constrained(_perturb(rng))]
  for patched, fresh in _patched_and_fresh(
      network, head, calibration, held, 'int8', changes, probe, rng,
      calibration_size=24):
    assert_same_int8_model(patched.model_bytes, fresh.model_bytes, held,
                           probe)


@pytest.mark.parametrize('phase', CNN_PHASES)
def test_patched_fp32_cnn_is_the_fresh_conversion_byte_for_byte(phase,
                                                                breakout,
                                                                probe):
  network, head, calibration, held = _cnn_setup(breakout, phase)
  rng = np.random.default_rng(0)
  changes = [_constrained(_perturb(rng)), _zero_conv_channel]
  for patched, fresh in _patched_and_fresh(network, head, calibration, held,
                                           'fp32', changes, probe, rng):
    assert patched.model_bytes == fresh.model_bytes


@pytest.mark.parametrize('precision,sparse', [('fp16', False),
                                              ('dynamic_int8', False),
                                              ('int8', True)])
def test_other_precisions_and_sparse_convert_every_publish(precision, sparse,
                                                           probe):
  network, head, calibration, held = _setup('dqn')
  rng = np.random.default_rng(0)
  publisher = quantization.PolicyPublisher(network, 4, precision,
                                           sparse=sparse, probe=probe)
  for _ in range(2):
    _perturb(rng)(network, head, calibration)
    assert publisher.publish(calibration, held).route == 'converted'


def test_refusals_match_convert_policy(probe):
  network, _, calibration, _ = _setup('dqn')
  with pytest.raises(ValueError, match='choose from'):
    quantization.PolicyPublisher(network, 4, 'int4')
  publisher = quantization.PolicyPublisher(network, 4, 'int8', probe=probe)
  with pytest.raises(ValueError, match='non-empty'):
    publisher.publish(np.zeros((0, 4), np.float32))
  kernel = network.trainable_variables[-1]
  poisoned = kernel.numpy()
  poisoned.flat[0] = np.nan
  kernel.assign(poisoned)
  with pytest.raises(quantization.NonFiniteWeightsError, match='NaN/Inf'):
    publisher.publish(calibration)

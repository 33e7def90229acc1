"""No model that aborts LiteRT ships, and none takes down a process.

Issue 14: a saturated policy's int8 model (the rescale to the action spec
quantized over a collapsed range) made LiteRT abort inside allocate_tensors,
killing the quantizer. The export path now ends before tanh, and every model
is first loaded in a ModelProbe child.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks

from agents.d4pg import AGENT_CLASS
from agents.d4pg import config_for_env
from quarl.quantization.calibration import rollout_observations
from quarl import actors
from quarl import envs
from quarl import litert
from quarl import quantization

# Max |quantized - fp32| action error as a fraction of the action range.
TOLERANCE = {'fp32': 1e-5, 'fp16': 5e-3, 'dynamic_int8': 5e-2, 'int8': 0.1}
PROPERTY_BATCH = os.path.join(os.path.dirname(__file__),
                              'litert_property_batch.py')


def _head(policy):
  return next(module for module in policy.body.submodules
              if isinstance(module, acme_networks.NearZeroInitializedLinear))


def _saturate(policy, observations):
  """Drives the action head to tanh == -1 on every observation."""
  head = _head(policy)
  head.w.assign(head.w * 100.0)
  pre = policy.body(tf.constant(observations)).numpy()
  head.b.assign(head.b - (pre.max() + 60.0))
  assert np.all(policy.unit_action(tf.constant(observations)) == -1.0)


@pytest.fixture(scope='module')
def cartpole():
  environment = envs.make_environment('dm_control:cartpole:swingup', 0)
  spec = specs.make_environment_spec(environment)
  observations = rollout_observations(environment, 320,
                                      np.random.default_rng(0))
  agent = AGENT_CLASS(spec, config_for_env('dm_control:cartpole:swingup'))
  return agent, observations[:256], observations[256:]


@pytest.fixture(scope='module')
def aborting_model(cartpole):
  """The crash of issue 14: a saturated policy with its rescale in int8,
  converted as that issue's code did: every op int8 (actors' models now
  keep their ends in float, quantization/float_ends.py)."""
  agent, calibration, held = cartpole
  policy = agent.learner_policy()
  _saturate(policy, calibration)
  with pytest.raises(quantization.UnloadableModelError,
                     match='SIGABRT') as refused:
    quantization.convert_policy(policy, policy.variables,
                                agent.observation_size, 'int8_all',
                                calibration, held)
  return refused.value.model_bytes


def test_saturated_policy_with_its_rescale_loads_in_int8(cartpole):
  """With its ends in float, even the export issue 14 aborted on loads."""
  agent, calibration, held = cartpole
  policy = agent.learner_policy()
  _saturate(policy, calibration)
  model = quantization.convert_policy(policy, policy.variables,
                                      agent.observation_size, 'int8',
                                      calibration, held)
  assert model.max_abs_err <= 1e-3


@pytest.mark.parametrize('precision', quantization.PRECISIONS)
def test_saturated_policy_exports_at_every_precision(cartpole, precision):
  agent, calibration, held = cartpole
  policy = agent.learner_policy()
  _saturate(policy, calibration)
  export = agent.export_policy()
  for target, source in zip(export.variables, policy.variables):
    target.assign(source)
  model = quantization.convert_policy(
      export, export.variables, agent.observation_size, precision,
      calibration, held, postprocess=agent.model_postprocess,
      output_scale=agent.model_output_scale())
  runner = litert.LiteRTPolicy(model.model_bytes)  # Loads in-process.
  actions = np.stack([agent.model_postprocess(runner(o)) for o in held])
  np.testing.assert_allclose(actions, policy(tf.constant(held)).numpy(),
                             atol=TOLERANCE[precision] * 2.0)
  assert model.max_abs_err / 2.0 <= TOLERANCE[precision]  # Range is 2.
  assert model.p95_rel_err <= model.max_abs_err / 2.0 + 1e-9


def test_export_is_the_policy_before_its_squash(cartpole):
  agent, calibration, _ = cartpole
  policy = agent.learner_policy()
  _head(policy).b.assign([0.7])  # Outputs away from 0.
  export = agent.export_policy()
  for target, source in zip(export.variables, policy.variables):
    target.assign(source)
  observations = tf.constant(calibration[:16])
  np.testing.assert_allclose(
      agent.model_postprocess(export(observations).numpy()),
      policy(observations).numpy(), rtol=1e-6)


def test_probe_refuses_what_aborts_litert_and_keeps_serving(
    cartpole, aborting_model):
  agent, _, held = cartpole
  probe = litert.ModelProbe()
  with pytest.raises(litert.InvalidModelError, match='SIGABRT'):
    probe.run(aborting_model, held)
  good = agent.export_policy()
  model = quantization.convert_policy(good, good.variables,
                                      agent.observation_size, 'int8', held,
                                      probe=probe)  # A fresh child answers.
  assert probe.run(model.model_bytes, held).shape == (len(held), 1)
  with pytest.raises(litert.InvalidModelError, match='cannot load'):
    probe.check(b'\x00' * 64)
  probe.close()


def test_probe_gives_up_on_a_child_that_does_not_answer(
    cartpole, tmp_path, monkeypatch):
  """The child hangs in LiteRT's load (sitecustomize swaps the policy class
  for one that sleeps), so the timeout is the only way out."""
  agent, _, held = cartpole
  good = agent.export_policy()
  model_bytes = quantization.convert_policy(
      good, good.variables, agent.observation_size, 'fp32', held).model_bytes
  (tmp_path / 'sitecustomize.py').write_text(
      'import time\n'
      'from quarl.litert import interpreter\n'
      'class Hangs:\n'
      '  def __init__(self, model_bytes):\n'
      '    time.sleep(600)\n'
      'interpreter.LiteRTPolicy = Hangs\n')
  with monkeypatch.context() as patch:
    patch.setenv('PYTHONPATH', os.pathsep.join(
        [str(tmp_path)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    impatient = litert.ModelProbe(timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(litert.InvalidModelError, match='no answer within 1s'):
      impatient.check(model_bytes)
  assert time.monotonic() - started < 60  # Killed, not waited out.
  litert.ModelProbe().check(model_bytes)  # Without the hang, it answers.


def test_probe_clock_starts_once_its_child_is_ready(tmp_path, monkeypatch):
  """A slow start (a loaded machine) must not refuse a good model. The model
  is small, so sending it does not block until the child reads it (a pipe
  holds 64 KiB)."""
  weights = tf.constant(np.eye(4, 2, dtype=np.float32))
  matmul = tf.function(lambda x: tf.matmul(x, weights),
                       input_signature=[tf.TensorSpec([1, 4], tf.float32)])
  model_bytes = tf.lite.TFLiteConverter.from_concrete_functions(
      [matmul.get_concrete_function()], matmul).convert()
  assert len(model_bytes) < 16 << 10
  (tmp_path / 'sitecustomize.py').write_text('import time\ntime.sleep(4)\n')
  monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
      [str(tmp_path)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
  probe = litert.ModelProbe(timeout_s=2.0)  # Half the child's start-up.
  observations = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_allclose(probe.run(model_bytes, observations),
                             observations[:, :2])
  probe.close()


def test_refresher_survives_bytes_that_abort_litert(cartpole, aborting_model):
  agent, _, held = cartpole
  good = agent.export_policy()
  model_bytes = quantization.convert_policy(
      good, good.variables, agent.observation_size, 'int8', held).model_bytes
  published = {0: model_bytes}
  refresher = actors.ModelRefresher(
      lambda known: (*max(published.items()), 0) if max(published) > known
      else None)
  assert refresher.refresh_once() and refresher.version == 0
  published[1] = aborting_model
  assert not refresher.refresh_once()  # This process is still alive.
  assert refresher.load_failures == 1 and refresher.version == 0
  assert np.isfinite(refresher.policy(held[0])).all()
  published[2] = model_bytes
  assert refresher.refresh_once() and refresher.version == 2
  refresher.stop()


def test_200_random_policies_convert_and_load_without_abort():
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
  result = subprocess.run(
      [sys.executable, PROPERTY_BATCH, '200', '0'], env=env,
      capture_output=True, text=True, timeout=900, check=False)
  tail = '\n'.join(result.stdout.splitlines()[-3:] +
                   result.stderr.splitlines()[-15:])
  assert result.returncode == 0, f'exit {result.returncode}:\n{tail}'
  assert 'all 200 loaded and ran' in result.stdout

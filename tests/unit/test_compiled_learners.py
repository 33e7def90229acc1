"""graph and xla learner steps compute the same update, GST constraint on."""
import numpy as np
import pytest
import tensorflow as tf
from acme import specs

import agents
from quarl import compression
from quarl import envs
from replay_helpers import serve_replay

STEPS = 20
CASES = {
    'd4pg': ('gym:Pendulum-v1', dict(policy_layers=(32, 32, 32),
                                     critic_layers=(32, 32))),
    # XLA's random kernels draw another stream than TF's: no target noise.
    'td3': ('gym:Pendulum-v1', dict(policy_layers=(32, 32, 32),
                                    critic_layers=(32, 32), target_noise=0.0)),
    'dqn': ('gym:CartPole-v1', dict(q_layers=(32, 32, 32))),
}


def _run(agent, client, sample, mode, ahead=False):
  """Losses of STEPS compiled updates on one batch, and the final weights;
  `ahead`: the update compiled ahead (compile_ahead) first."""
  tf.random.set_seed(0)
  bundle = agent.make_learner(client, None, None, compile_mode=mode)
  controller = compression.make_controller(
      'gst', bundle.compressible_layers, block_size=4, end_step=10_000)
  bundle.learner.constrain = controller.constrain
  if ahead:
    before = [v.numpy() for network in bundle.networks
              for v in network.variables]
    assert bundle.learner.compile_ahead()
    for value, variable in zip(before, [v for network in bundle.networks
                                        for v in network.variables]):
      np.testing.assert_array_equal(variable.numpy(), value)
    traced = bundle.learner._update.experimental_get_tracing_count()  # pylint: disable=protected-access
  if sample is None:
    sample = next(bundle.learner._samples)  # pylint: disable=protected-access
  losses = []
  for _ in range(STEPS):
    fetches = bundle.learner._update(sample)  # pylint: disable=protected-access
    losses.append([float(fetches[k]) for k in sorted(fetches)
                   if k.endswith('loss')])
  weights = [v.numpy() for network in bundle.networks
             for v in network.variables]
  if ahead:  # No new trace: a replay sample matches the stand-in's signature.
    assert bundle.learner._update.experimental_get_tracing_count() == traced  # pylint: disable=protected-access
  return sample, np.array(losses), weights, bundle


def _agent_and_replay(name):
  """The case's agent and a Reverb server holding 300 random transitions."""
  env_name, layers = CASES[name]
  environment = envs.make_environment(env_name, 0)
  spec = specs.make_environment_spec(environment)
  agent_class, config_for_env = agents.lookup(name)
  agent = agent_class(spec, config_for_env(
      env_name, batch_size=32, min_replay_size=64, samples_per_insert=None,
      **layers))
  rng = np.random.default_rng(0)
  server, client = serve_replay(
      agent, environment, 300,
      lambda: envs.random_action(spec.actions, rng))
  return agent, server, client


@pytest.mark.parametrize('name', sorted(CASES))
def test_graph_and_xla_agree_for_20_steps_with_gst(name):
  agent, server, client = _agent_and_replay(name)
  try:
    sample, graph_losses, graph_weights, bundle = _run(
        agent, client, None, 'graph')
    _, xla_losses, xla_weights, _ = _run(agent, client, sample, 'xla')
  finally:
    server.stop()
  assert graph_losses.shape[0] == STEPS and graph_losses.shape[1] >= 1
  np.testing.assert_allclose(xla_losses, graph_losses, rtol=1e-4, atol=1e-6)
  # Adam moves a weight by about its learning rate whatever the gradient's
  # size, so where a gradient is ~0 XLA's reordered float sums can flip a
  # step's sign. Nearly every weight agrees to 1e-5; the few flipped ones
  # (CI once saw 2 of 32 critic biases 2.5e-4 apart) stay within one step of
  # the largest learning rate here (1e-3).
  xla = np.concatenate([w.ravel() for w in xla_weights])
  graph = np.concatenate([w.ravel() for w in graph_weights])
  assert np.mean(np.abs(xla - graph) > 1e-5) < 0.01
  np.testing.assert_allclose(xla, graph, rtol=0, atol=1e-3)
  # The constraint ran inside the steps: after 20 optimizer updates the
  # kernels are still exactly block-circulant (re-projecting moves nothing).
  for layer in bundle.compressible_layers:
    kernel = layer.w.numpy()
    layer.apply_constraint()
    np.testing.assert_allclose(layer.w.numpy(), kernel, atol=1e-6)



@pytest.mark.parametrize('name', sorted(CASES))
def test_compile_ahead_leaves_the_learner_as_it_was(name):
  """Compiled on a stand-in batch before the replay serves one (weights
  unmoved), a learner then takes exactly the steps of one compiled at its
  first step: every variable the stand-in update touched, the optimizers'
  slots and step counts included, was put back."""
  agent, server, client = _agent_and_replay(name)
  try:
    sample, losses, weights, _ = _run(agent, client, None, 'xla')
    _, ahead_losses, ahead_weights, _ = _run(agent, client, sample, 'xla',
                                             ahead=True)
  finally:
    server.stop()
  np.testing.assert_array_equal(ahead_losses, losses)
  for got, want in zip(ahead_weights, weights):
    np.testing.assert_array_equal(got, want)


def test_autograph_leaves_sonnet_modules_as_they_are():
  """agents.compiled's rule: half of each learner's trace was AutoGraph
  converting Sonnet's code, which branches on Python values only."""
  import sonnet as snt  # pylint: disable=g-import-not-at-top
  from tensorflow.python.autograph.impl import conversion  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  assert conversion.is_allowlisted(snt.Linear(2).__call__)
  assert not conversion.is_allowlisted(agents.compiled.SampleFeed.__next__)

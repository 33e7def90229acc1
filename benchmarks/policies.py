"""Helpers the policy benchmarks (and the tests that reuse them) share, no
flags: each benchmark defines its own. Policies driven into output regimes,
a trained D4PG policy and what it observes, greedy returns, per-call timing,
and an int8 model given a deliberately wrong scale."""
import dataclasses
import json
import os
import time
from typing import Dict, Sequence

import dm_env
import numpy as np
import tensorflow as tf
from acme import specs
from acme.tf import networks as acme_networks
from tensorflow.lite.python import schema_py_generated as schema

from agents.d4pg import AGENT_CLASS
from agents.d4pg import config as d4pg_config
from launch.runtime import run_dir as run_dir_lib
from quarl import envs
from quarl import quantization
from quarl.actors import LiteRTPolicy
from quarl.quantization import calibration

REGIMES = ('init', 'moderate', 'bang_bang', 'saturated', 'dead_relu')
# Exploration noise of the observations a trained policy is measured on, in
# units of the action half-range (the middle of D4PG's sigma ladder).
EXPLORATION = 0.3


def set_regime(policy, regime: str, observations: np.ndarray) -> None:
  """Drives the head (or the torso) into `regime` on these observations."""
  head = next(m for m in policy.body.submodules
              if isinstance(m, acme_networks.NearZeroInitializedLinear))
  if regime == 'dead_relu':
    last_hidden = [m for m in policy.body.submodules
                   if hasattr(m, 'b') and m is not head][-1]
    last_hidden.b.assign(tf.fill(last_hidden.b.shape, -1e3))
    head.b.assign(tf.fill(head.b.shape, 0.3))
    return
  if regime == 'init':
    return
  pre = policy.body(tf.constant(observations)).numpy()
  target_std = {'moderate': 1.0, 'bang_bang': 20.0, 'saturated': 20.0}[regime]
  head.w.assign(head.w * target_std / max(float(np.std(pre)), 1e-9))
  if regime == 'saturated':
    pre = policy.body(tf.constant(observations)).numpy()
    # tanh is exactly -1 in float32 below ~ -9: the collapsed range of the
    # issue-14 crash.
    head.b.assign(head.b - (np.max(pre, axis=0) + 20.0))



def time_us(call, observations: np.ndarray, seconds: float) -> float:
  """Median-of-batches microseconds per call (robust to a noisy neighbour)."""
  for o in observations[:50]:
    call(o)
  per_batch = []
  deadline = time.perf_counter() + seconds
  while time.perf_counter() < deadline or len(per_batch) < 5:
    start = time.perf_counter()
    for o in observations[:100]:
      call(o)
    per_batch.append((time.perf_counter() - start) / 100)
  return 1e6 * float(np.median(per_batch))


@dataclasses.dataclass(frozen=True)
class TrainedPolicy:
  environment: dm_env.Environment  # Seeded 0.
  spec: specs.EnvironmentSpec
  policy: tf.Module  # Observation batch -> action batch (body: pre-tanh).
  agent: AGENT_CLASS  # Its model_postprocess is what actors apply.
  env_name: str
  label: str  # 'ENV WIDTHS LayerNorm|ReLU'


def trained_policy(run_dir: str) -> TrainedPolicy:
  """A D4PG run's policy at its last learner checkpoint."""
  with open(os.path.join(run_dir, 'config.json')) as f:
    run = json.load(f)['run']
  if run['agent'] != 'd4pg':
    raise ValueError(f'{run_dir} is a {run["agent"]} run, not d4pg')
  checkpoint = tf.train.latest_checkpoint(
      os.path.join(run_dir, run_dir_lib.LEARNER_DIR))
  if checkpoint is None:
    raise ValueError(f'{run_dir} holds no learner checkpoint')
  environment = envs.make_environment(run['env'], 0)
  spec = specs.make_environment_spec(environment)
  agent = AGENT_CLASS(spec, d4pg_config.D4PGConfig(**run['agent_config']))
  policy = agent.learner_policy()
  tf.train.Checkpoint(policy=policy).restore(checkpoint).expect_partial()
  shape = 'x'.join(map(str, run['agent_config']['policy_layers']))
  norm = 'LayerNorm' if run['agent_config']['policy_layer_norm'] else 'ReLU'
  return TrainedPolicy(environment, spec, policy, agent, run['env'],
                       f'{run["env"]} {shape} {norm}')


def exploring_observations(trained: TrainedPolicy, steps: int,
                           rng: np.random.Generator) -> np.ndarray:
  """Observations of the policy acting with Gaussian noise, shuffled (what
  the replay a quantizer calibrates on holds)."""
  environment, spec, policy = (trained.environment, trained.spec,
                               trained.policy)
  half_range = (spec.actions.maximum - spec.actions.minimum) / 2
  observations = []
  timestep = environment.reset()
  for _ in range(steps):
    observation = np.asarray(timestep.observation, np.float32).ravel()
    observations.append(observation)
    action = policy(tf.constant(observation[None]))[0].numpy()
    action = action + rng.normal(0, EXPLORATION * half_range, action.shape)
    timestep = environment.step(np.clip(
        action, spec.actions.minimum, spec.actions.maximum).astype(
            spec.actions.dtype))
    if timestep.last():
      timestep = environment.reset()
  observations = np.stack(observations)
  rng.shuffle(observations)
  return observations


def greedy_returns(act, env_name: str, episodes: int) -> np.ndarray:
  """Episode returns of `act` (flat float32 observation -> action) on a
  fresh copy of `env_name` seeded 0: every policy meets the same starts."""
  environment = envs.make_environment(env_name, 0)
  returns = []
  for _ in range(episodes):
    timestep, total = environment.reset(), 0.0
    while not timestep.last():
      timestep = environment.step(
          act(np.asarray(timestep.observation, np.float32).ravel()))
      total += float(timestep.reward)
    returns.append(total)
  return np.array(returns)


def with_wrong_scale(model_bytes: bytes, factor: float) -> bytes:
  """`model_bytes` with the scale of every int8 activation a hidden layer
  writes (FULLY_CONNECTED outputs) multiplied by `factor`: what a quantizer
  that computed its ranges wrong would publish. Below 1 the range is too
  narrow and activations clip; above 1, too wide, they lose resolution."""
  buffer = bytearray(model_bytes)
  model = schema.Model.GetRootAsModel(buffer, 0)
  graph = model.Subgraphs(0)
  for i in range(graph.OperatorsLength()):
    op = graph.Operators(i)
    code = model.OperatorCodes(op.OpcodeIndex())
    if max(code.BuiltinCode(), code.DeprecatedBuiltinCode()) != (
        schema.BuiltinOperator.FULLY_CONNECTED):
      continue
    output = graph.Tensors(int(op.Outputs(0)))
    if output.Type() == schema.TensorType.INT8:
      output.Quantization().ScaleAsNumpy()[...] *= factor  # A view of buffer.
  return bytes(buffer)


def int8_act(model_bytes: bytes, trained: TrainedPolicy):
  """The greedy int8 actor: the model, then the agent's float postprocess,
  as LiteRT actors run it."""
  runner = LiteRTPolicy(model_bytes, num_threads=1)
  return lambda obs: trained.agent.model_postprocess(runner(obs))


def greedy_returns_by_model(run_dir: str, episodes: int,
                            wrong_scales: Sequence[float]
                            ) -> Dict[str, np.ndarray]:
  """{'fp32' | 'int8' | 'int8 scale xF': greedy episode returns} of a D4PG
  run's last checkpoint, its int8 model calibrated as a publish is."""
  trained = trained_policy(run_dir)
  observations = exploring_observations(
      trained, calibration.ROLLOUT_SAMPLES, np.random.default_rng(0))
  model = quantization.convert_policy(
      trained.policy.body, trained.policy.variables, observations.shape[1],
      'int8', observations[:calibration.CALIBRATION_SAMPLES],
      observations[calibration.CALIBRATION_SAMPLES:])
  acts = {
      'fp32': lambda obs: trained.policy(tf.constant(obs[None]))[0].numpy(),
      'int8': int8_act(model.model_bytes, trained)}
  for factor in wrong_scales:
    acts[f'int8 scale x{factor:g}'] = int8_act(
        with_wrong_scale(model.model_bytes, factor), trained)
  return {name: greedy_returns(act, trained.env_name, episodes)
          for name, act in acts.items()}

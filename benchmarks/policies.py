"""Helpers the policy benchmarks share (no flags: each benchmark defines its
own): policies driven into output regimes, and per-call timing."""
import time

import numpy as np
import tensorflow as tf
from acme.tf import networks as acme_networks

REGIMES = ('init', 'moderate', 'bang_bang', 'saturated', 'dead_relu')


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

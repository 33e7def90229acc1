"""Per-actor exploration: each actor i explores at its own noise level.

A ladder of noise levels across actors (as in Ape-X) gives the replay a mix of
near-greedy and exploratory data; the reference ActorQ implementation meant to
do this and gave every actor the same value.
"""
from typing import Any, Callable, Dict, Tuple

import numpy as np
from acme import specs


def sigma_ladder(actor_id: int, num_actors: int, sigma_min: float = 0.05,
                 sigma_max: float = 0.5) -> float:
  """Gaussian sigma for actor `actor_id`, log-spaced from max down to min."""
  if num_actors == 1:
    return float(np.sqrt(sigma_min * sigma_max))
  fraction = actor_id / (num_actors - 1)
  return float(sigma_max * (sigma_min / sigma_max) ** fraction)


def epsilon_ladder(actor_id: int, num_actors: int, base: float = 0.4,
                   alpha: float = 7.0) -> float:
  """Ape-X epsilon: base ** (1 + alpha * i / (N - 1)); one actor gets base."""
  if num_actors == 1:
    return base
  return float(base ** (1.0 + alpha * actor_id / (num_actors - 1)))


def unit_to_spec(unit_action: np.ndarray,
                 action_spec: specs.BoundedArray) -> np.ndarray:
  """[-1, 1] -> [minimum, maximum]: the policy's rescale, in float.

  It runs here rather than in the quantized model: when a policy saturates,
  the rescale's int8 ranges collapse to ~0 and LiteRT aborts on the model.
  """
  low = np.asarray(action_spec.minimum, np.float32)
  high = np.asarray(action_spec.maximum, np.float32)
  return low + (np.asarray(unit_action, np.float32) + 1.0) * 0.5 * (high - low)


def gaussian_behaviour(sigma: float, action_spec: specs.BoundedArray,
                       rng: np.random.Generator,
                       to_action: Callable[[np.ndarray], np.ndarray]
                       ) -> Callable[[np.ndarray], np.ndarray]:
  """Model output -> `to_action` (the float squash to the action spec)
  + N(0, sigma^2) noise, clipped to the action bounds."""
  low = np.asarray(action_spec.minimum, np.float32)
  high = np.asarray(action_spec.maximum, np.float32)

  def behave(output: np.ndarray) -> np.ndarray:
    action = to_action(output)
    noisy = action + rng.normal(0.0, sigma, size=action.shape)
    return np.clip(noisy, low, high).astype(action_spec.dtype)

  return behave


def epsilon_greedy_behaviour(epsilon: float, num_actions: int,
                             rng: np.random.Generator
                             ) -> Callable[[np.ndarray], np.ndarray]:
  """Q-values -> argmax, or a uniform random action with prob. epsilon."""

  def behave(q_values: np.ndarray) -> np.ndarray:
    if rng.random() < epsilon:
      return np.int32(rng.integers(num_actions))
    return np.int32(np.argmax(q_values))

  return behave


def split_decision(decision) -> Tuple[Any, Any]:
  """(action, extras) of what a behaviour returned: on-policy behaviours
  give both, the others the action alone (no extras: Acme's default)."""
  if isinstance(decision, tuple):
    return decision
  return decision, ()


def categorical_behaviour(rng: np.random.Generator,
                          policy_step: Callable[[], int]
                          ) -> Callable[[np.ndarray], Tuple[np.int32, Dict]]:
  """Logits -> (action, extras) for on-policy learners: an action drawn from
  softmax(logits), with its log-probability under the acting policy
  (importance ratios) and the learner step that policy was made at (the
  policy lag)."""

  def behave(logits: np.ndarray) -> Tuple[np.int32, Dict]:
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max()
    log_probs = shifted - np.log(np.sum(np.exp(shifted)))
    cumulative = np.cumsum(np.exp(log_probs))
    action = min(int(np.searchsorted(cumulative, rng.random() *
                                     cumulative[-1])), len(logits) - 1)
    return np.int32(action), dict(log_prob=np.float32(log_probs[action]),
                                  policy_step=np.int64(policy_step()))

  return behave

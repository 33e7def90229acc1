"""Which stage bounds a replay agent's run, and what faster actors give it.

Actors supply env steps at A per second when nothing blocks them. The
learner, at L steps per second, retires each transition after rho samples
(the replay ratio's samples per insert, or in ActorQ's regime the
max_times_sampled that evicts an item), so it needs B / rho fresh
transitions a step of batch B. Its progress is then

  min(L, A * rho / B) learner steps per second,

actor-bound when A * rho / B < L. Actors k times faster reach a target in
learner steps sooner by S = min(L', k A rho / B) / min(L, A rho / B), L'
the learner stage's rate under their load: int8 pays only in actor-bound
runs, and only up to the learner's own rate.

Rates come from the run's own summary.json: A from the actors' steps per
second over the share of their time not spent in the adder (under a replay
ratio that share is mostly the limiter's wait), L from the learner stage's
steps per CPU-second. That stage is the learner's process and the replay
server's: the server answers every sample and every actor's insert, and
under --pin_cpus it shares the learner's core, so faster actors' inserts
take CPU from the learner. Each run's L therefore carries its own actors'
insert load, and a speedup compares each arm's own progress.
"""
from typing import Any, Dict, Mapping, Optional

# The actors' activities besides inference (actors.csv's time split).
_NOT_INFERENCE = ('env', 'refresh')


def learner_progress(learner_rate: float, actor_rate: float,
                     fresh_per_step: float) -> float:
  """Learner steps per second the pipeline sustains, the learner needing
  `fresh_per_step` (B / rho) new transitions a step."""
  return min(learner_rate, actor_rate / fresh_per_step)


def speedup(learner_rate: float, actor_rate: float, faster_actor_rate: float,
            fresh_per_step: float) -> float:
  """Time-to-target ratio when the actors' rate goes from `actor_rate` to
  `faster_actor_rate`, the learner unchanged."""
  return (learner_progress(learner_rate, faster_actor_rate, fresh_per_step) /
          learner_progress(learner_rate, actor_rate, fresh_per_step))


def predicted_speedup(baseline: Mapping[str, Any],
                      faster: Mapping[str, Any]) -> Optional[float]:
  """From two runs' `pipeline` figures: each arm's progress, from its own
  learner stage and actors, over the baseline's."""
  if not (baseline and faster):
    return None
  fresh = baseline['fresh_transitions_per_learner_step']
  return (learner_progress(faster['learner_steps_per_cpu_s'],
                           faster['actor_steps_per_s_unblocked'], fresh) /
          learner_progress(baseline['learner_steps_per_cpu_s'],
                           baseline['actor_steps_per_s_unblocked'], fresh))


def _rho(replay: Mapping[str, Any]) -> Optional[float]:
  return replay.get('samples_per_insert') or replay.get('max_times_sampled')


def actor_rate(summary: Mapping[str, Any],
               without_inference: bool = False) -> Optional[float]:
  """Env steps per second the actors would make unblocked (and with free
  inference, for `without_inference`)."""
  split = summary.get('actor_time_split') or {}
  rate = summary.get('actor_steps_per_s')
  if not split or not rate:
    return None
  throttled = summary['replay']['regime'] == 'samples_per_insert'
  # Unthrottled actors' adder time is the insert itself: part of a step.
  working = list(_NOT_INFERENCE) + ([] if throttled else ['adder'])
  working_share = sum(split.get(key, 0.0) for key in working)
  busy = working_share + (0.0 if without_inference else
                          split.get('inference', 0.0))
  return rate / busy if busy else None


def _node_cpu_s(summary: Mapping[str, Any], node: str) -> Optional[float]:
  return (summary.get('node_cpu_seconds') or {}).get(node)


def learner_cpu_s(summary: Mapping[str, Any]) -> Optional[float]:
  """The learner process's CPU seconds once stepping: the CPU before its
  first step (imports, build, compile) is start-up, which the model counts
  apart and benchmarks/learner_step.py's standalone update excludes too."""
  cpu = _node_cpu_s(summary, 'learner')
  if not cpu:
    return None
  stepping = cpu - (summary.get('learner_startup_cpu_s') or 0.0)
  return stepping if stepping > 0 else None


def learner_rate(summary: Mapping[str, Any]) -> Optional[float]:
  """The learner stage's steps per CPU-second: the learner's stepping CPU
  plus the replay server's (runs made before the server recorded its CPU
  count the learner alone)."""
  cpu, steps = learner_cpu_s(summary), summary.get('learner_steps')
  if not (cpu and steps):
    return None
  return steps / (cpu + (_node_cpu_s(summary, 'replay') or 0.0))


def stepping_seconds(summary: Mapping[str, Any]) -> Optional[float]:
  """Wall seconds from the learner's first step to the run's end."""
  first, wall = (summary.get('time_to_first_learner_step_s'),
                 summary.get('wall_s'))
  if first is None or not wall or wall <= first:
    return None
  return wall - first


def learner_busy_share(summary: Mapping[str, Any]) -> Optional[float]:
  """The share of the wall time since its first step the learner spent on
  CPU. Well below 1, the learner waited, for samples or for a core: then
  it, not its steps per CPU-second, sets the run's pace, and the model above
  (which takes L from those) overestimates what faster actors give."""
  cpu, stepping = learner_cpu_s(summary), stepping_seconds(summary)
  if not (cpu and stepping):
    return None
  return cpu / stepping


def describe(summary: Mapping[str, Any],
             batch_size: int) -> Optional[Dict[str, Any]]:
  """summary.json's `pipeline`: the rates, the bound and the most any
  actor precision can give this run (inference made free)."""
  if 'replay' not in summary:
    return None
  rho = _rho(summary['replay'])
  actors, learner = actor_rate(summary), learner_rate(summary)
  free = actor_rate(summary, without_inference=True)
  if not (rho and actors and learner and free):
    return None
  fresh = batch_size / rho
  busy = learner_busy_share(summary)
  steps = summary['learner_steps']
  replay = _node_cpu_s(summary, 'replay')
  return dict(
      actor_steps_per_s_unblocked=round(actors, 1),
      learner_steps_per_cpu_s=round(learner, 2),
      learner_cpu_ms_per_step=round(1000.0 * learner_cpu_s(summary) / steps,
                                    2),
      replay_cpu_ms_per_learner_step=(None if replay is None else
                                      round(1000.0 * replay / steps, 2)),
      learner_busy_share=None if busy is None else round(busy, 3),
      fresh_transitions_per_learner_step=round(fresh, 3),
      bound='actor' if actors / fresh < learner else 'learner',
      speedup_with_free_inference=round(
          speedup(learner, actors, free, fresh), 3))

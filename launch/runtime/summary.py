"""summary.json: the headline numbers of a run, computed from its CSVs.

Built by the launcher after the nodes stop (or die), from what is on disk,
so an interrupted or failed run still gets an honest summary.
"""
import os
import time
from typing import Any, Dict, Mapping, Optional, Tuple

from agents import replay
from launch import groups
from launch.analysis import pipeline_model
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import saved_state
from launch.runtime import stop
from launch.config import RunConfig

# summary.json's last5_return: the mean of this many last evaluations (one
# evaluation is noisy; a dip at the end says little).
LAST_EVALUATIONS = 5


def _floats(rows, key):
  return [float(r[key]) for r in rows if r.get(key) not in (None, '')]


def latest_actor_rows(run_dir: str):
  """Each actor's newest actors.csv row (its cumulative figures)."""
  rows = run_dir_lib.read_csv(os.path.join(run_dir, run_dir_lib.ACTORS_CSV))
  return list({row['actor_id']: row for row in rows}.values())


TIME_SPLIT_KEYS = ('env_s', 'inference_s', 'adder_s', 'refresh_s')


def actor_time_split(actor_rows) -> Dict[str, float]:
  """Fraction of actor time per activity, summed over actors.

  A large adder share means actors wait on Reverb's rate limiter, i.e. the
  run is learner-bound; a large env or inference share means actor-bound.
  """
  totals = {key: sum(_floats(actor_rows, key)) for key in TIME_SPLIT_KEYS}
  grand_total = sum(totals.values())
  if not grand_total:
    return {}
  return {key[:-2]: value / grand_total for key, value in totals.items()}


def cpu_share(node_cpu_seconds: Mapping[str, float],
              node: str) -> Optional[float]:
  """`node`'s fraction of the CPU seconds recorded by every process of the
  run (launcher included); None if `node` recorded nothing."""
  total = sum(node_cpu_seconds.values())
  if node not in node_cpu_seconds or not total:
    return None
  return node_cpu_seconds[node] / total


def fp32_return_gap(evaluations, last: int = 3) -> Optional[float]:
  """Greedy return of the actors' model minus the learner's fp32 policy,
  mean of the last `last` evaluations that measured both (--eval_fp32):
  the quantized policy's reward parity."""
  pairs = [(float(r['episode_return']), float(r['fp32_return']))
           for r in evaluations if r.get('fp32_return')]
  if not pairs:
    return None
  return sum(q - f for q, f in pairs[-last:]) / len(pairs[-last:])


def first_step_s(startup_rows, group: str) -> Optional[float]:
  """Seconds from launch to the first step any `group` node took (the
  first segment's, for a resumed run); None if none stepped."""
  times = [float(r['wall_time_s']) for r in startup_rows
           if r['event'] == 'first_step'
           and groups.group_of(r['node']) == group]
  return round(min(times), 1) if times else None


def startup_cpu_s(startup_rows, group: str) -> float:
  """CPU seconds `group`'s processes spent before their first step (imports,
  build, first compile), summed over the run's segments."""
  return round(sum(float(r.get('cpu_s') or 0.0) for r in startup_rows
                   if r['event'] == 'first_step'
                   and groups.group_of(r['node']) == group), 2)


def replay_figures(agent_config, summary) -> Dict[str, Any]:
  """The replay regime that ran and the replay ratio it realised: samples
  the learner drew per env step (one insert each), whichever limiter ran."""
  if not hasattr(agent_config, 'min_replay_size'):
    return {}
  drawn = summary['learner_steps'] * agent_config.batch_size
  return dict(replay=replay.regime(agent_config),
              realised_samples_per_insert=(
                  round(drawn / summary['actor_steps'], 3)
                  if summary['actor_steps'] else None))


def pipeline_figures(agent_config, summary) -> Dict[str, Any]:
  """The bound and what faster actors could give (launch/pipeline_model)."""
  if 'replay' not in summary:
    return {}
  return dict(pipeline=pipeline_model.describe(summary,
                                               agent_config.batch_size))


def resumed_from(point) -> Dict[str, Any]:
  """summary.json's record of what this segment restored (a ResumePoint)."""
  return dict(learner_checkpoint=point.learner_checkpoint,
              fell_back=point.learner_checkpoint != point.newest_checkpoint,
              counts_from=point.counts_from, replay=point.replay,
              replay_checkpoint=point.replay_checkpoint,
              set_aside=[dict(file=file, why=why)
                         for file, why in point.set_aside])


def run_status(stop_reason: str, budget_reached: bool) -> Tuple[str, str]:
  """(status, detail): decided here alone. A node's failure fails the run;
  so does the launcher's backstop unless the evaluations reached the budget
  (completed means progress to the budget); otherwise, however the stop came
  (Ctrl-C, Launchpad's stop, the budget), the budget decides between
  completed and interrupted."""
  if stop_reason.startswith('failed') or (
      stop_reason == stop.BACKSTOP and not budget_reached):
    return 'failed', stop_reason
  return ('completed' if budget_reached else 'interrupted'), ''


def run_summary(config: RunConfig, outcome, budget_reached: bool,
                baseline_returns: Optional[Mapping[str, float]],
                energy: Mapping[str, Any], network: str,
                segment_wall_s: float,
                segment_start: float = 0.0) -> Dict[str, Any]:
  """summary.json of a run that ended with `outcome` (supervisor.Outcome):
  its status, the run directory's figures, restarts, placement, the
  reference returns, the energy over every segment, what a resumed segment
  restored, and the replay checkpoints that missed their bound."""
  status, detail = run_status(outcome.reason, budget_reached)
  extra = dict(
      network=network, restarts=sum(outcome.restarts.values()),
      restarts_by_node={k: v for k, v in outcome.restarts.items() if v},
      hosts=outcome.hosts, segment_wall_s=round(segment_wall_s, 1),
      **energy)
  if detail:
    extra['status_detail'] = detail
  if baseline_returns:
    extra['baseline_returns'] = baseline_returns
  if config.resume_point:
    extra['resumed_from'] = resumed_from(config.resume_point)
  extra['replay_saves_missed'] = saved_state.replay_saves_missed(
      config.run_dir, since=segment_start)
  return build_summary(config, time.time() - config.start_time, status,
                       extra)


def build_summary(config: RunConfig, wall_s: float, status: str,
                  extra: Mapping[str, Any] = ()) -> Dict[str, Any]:
  """The figures the run directory holds, with `extra` merged in."""
  path = lambda name: os.path.join(config.run_dir, name)  # pylint: disable=unnecessary-lambda-assignment
  evaluations = run_dir_lib.read_csv(path(run_dir_lib.EVALUATOR_CSV))
  actor_rows = latest_actor_rows(config.run_dir)
  quantizer_rows = run_dir_lib.read_csv(path(run_dir_lib.QUANTIZER_CSV))
  publishes = [r for r in quantizer_rows if int(r['version']) >= 0]
  compression = run_dir_lib.read_csv(path(run_dir_lib.COMPRESSION_CSV))
  startup = run_dir_lib.read_csv(path(run_dir_lib.STARTUP_CSV))
  returns = _floats(evaluations, 'episode_return')
  fp32_returns = _floats(evaluations, 'fp32_return')
  last = evaluations[-1] if evaluations else {}
  summary = dict(
      status=status,
      agent=config.agent,
      env=config.env,
      actor_precision=config.actor_precision,
      num_actors=config.num_actors,
      seed=config.seed,
      wall_s=round(wall_s, 2),
      actor_steps=int(float(last.get('actor_steps', 0) or 0)),
      learner_steps=int(float(last.get('learner_steps', 0) or 0)),
      evaluations=len(returns),
      final_return=returns[-1] if returns else None,
      best_return=max(returns) if returns else None,
      last5_return=(sum(returns[-LAST_EVALUATIONS:]) /
                    len(returns[-LAST_EVALUATIONS:]) if returns else None),
      final_fp32_return=fp32_returns[-1] if fp32_returns else None,
      fp32_return_gap=fp32_return_gap(evaluations),
      time_to_first_actor_step_s=first_step_s(startup, 'actor'),
      time_to_first_learner_step_s=first_step_s(startup, 'learner'),
      learner_startup_cpu_s=startup_cpu_s(startup, 'learner'),
      actor_steps_per_s=sum(_floats(actor_rows, 'steps_per_s')),
      actor_time_split=actor_time_split(actor_rows),
      mean_inference_us=(sum(_floats(actor_rows, 'mean_inference_us')) /
                         len(actor_rows) if actor_rows else None),
      publishes=len(publishes),
      model_bytes=int(publishes[-1]['model_bytes']) if publishes else None,
      refused_publishes=len(quantizer_rows) - len(publishes),
      max_abs_err=float(publishes[-1]['max_abs_err']) if publishes else None,
      mean_rel_err=(float(publishes[-1]['mean_rel_err']) if publishes
                    else None),
      p95_rel_err=float(publishes[-1]['p95_rel_err']) if publishes else None,
      compression=config.compression.kind,
      average_cr=(float(compression[-1]['average_cr']) if compression
                  else None),
      final_cr=(float(compression[-1]['compressed_cr']) if compression
                else None),
      final_network_cr=(float(compression[-1]['network_cr']) if compression
                        else None),
  )
  summary.update(replay_figures(config.agent_config, summary))
  summary.update(extra)
  summary.update(pipeline_figures(config.agent_config, summary))
  # What publishing costs (the quantizer converts or patches every cycle).
  # Under local_mt every node is a thread of one process and records that
  # whole process's CPU, so no node's share can be told.
  summary['quantizer_cpu_share'] = (
      None if config.launch_type == 'local_mt' else
      cpu_share(summary.get('node_cpu_seconds', {}), 'quantizer'))
  return summary

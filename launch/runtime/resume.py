"""What --resume may change: a resumed run must be the run it continues.

The saved state (learner checkpoint, replay table, counts, GST schedule,
quantizer epoch) only means something for the settings that made it, so a
resume compares the new RunConfig with the `run` section of config.json
(dataclasses.asdict as JSON) and refuses any difference in IDENTITY:

* agent, env, actor_precision, seed, launch_type (local_mt also drops the
  replay rate limit), num_actors (each actor's exploration sigma or epsilon
  and the replay's fill rate), publish_sparse, preset;
* every knob of compression but log_every (logging only);
* agent_config: network shapes and every hyper-parameter. A run recorded
  before config.json held the preset has it checked through these.

MUTABLE settings may change: budgets (they count the whole run), evaluation
and logging, restarts and stall timeouts, placement and compilation (same
math, same checkpoint), the carbon country, oversubscribe (a launch's
consent to crowd its machine), and publish_period: it paces
how often actors get the learner's policy, and no saved state depends on it.

DERIVED values are measured by the launcher, not set by a flag: a resume
keeps the run's (GST's pause band stays measured from the same return).
"""
import dataclasses
import json
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

from launch.runtime import run_dir as run_dir_lib
from launch.runtime import saved_state
from launch.config import RunConfig

IDENTITY = ('agent', 'env', 'actor_precision', 'num_actors', 'seed',
            'launch_type', 'publish_sparse', 'preset', 'compression',
            'agent_config')
MUTABLE = ('max_seconds', 'max_actor_steps', 'eval_episodes', 'eval_every',
           'oversubscribe',
           'eval_fp32', 'max_restarts', 'stall_timeout_s', 'network',
           'ray_address', 'pin_cpus', 'learner_compile', 'node_start',
           'country_iso_code',
           'publish_period', 'compression.log_every',
           # Bookkeeping of this launch, not of the run.
           'run_dir', 'resume', 'overwrite', 'resume_point', 'start_time')
DERIVED = ('compression.reward_reference',)

# The state a resume restores besides config.json.
_REQUIRED = (run_dir_lib.CONFIG_JSON, run_dir_lib.LEARNER_INDEX,
             run_dir_lib.COUNTS_JSON)
_SHOWN_DIFFERENCES = 8


class _Absent:
  """A setting one side does not record (a run from an older launcher)."""

  def __repr__(self):
    return 'unrecorded'


_ABSENT = _Absent()


def missing_state(run_dir: str) -> Optional[str]:
  """What run_dir lacks to be resumed, or None when it has it all."""
  if not os.path.isdir(run_dir):
    return 'no such directory'
  if not run_dir_lib.contents(run_dir):
    return 'the directory is empty'
  missing = [name for name in _REQUIRED
             if not os.path.exists(os.path.join(run_dir, name))]
  return 'no ' + ', no '.join(missing) if missing else None


def check(run_dir: str, config: RunConfig) -> RunConfig:
  """The config to resume run_dir with: `config`, the run's DERIVED values
  and the saved state it restores (launch/runtime/saved_state.py: every
  file read back now, so a damaged one falls back or is refused before
  any node starts).

  Raises:
    run_dir_lib.RunDirError: a run another launcher holds, nothing
      resumable in run_dir, a run whose IDENTITY differs from `config`'s
      (each difference named), or saved state that does not restore (the
      damaged file named).
  """
  run_dir = os.path.abspath(os.path.expanduser(run_dir))
  run_dir_lib.refuse_if_locked(run_dir)  # Its files may be mid-save.
  missing = missing_state(run_dir)
  if missing:
    raise run_dir_lib.RunDirError(
        f'--resume of {run_dir}: nothing to resume ({missing}); start the '
        'run without --resume')
  recorded = _recorded(run_dir)
  compression = recorded.get('compression')
  if isinstance(compression, dict) and 'reward_reference' in compression:
    config = dataclasses.replace(config, compression=dataclasses.replace(
        config.compression, reward_reference=compression['reward_reference']))
  changed = differences(recorded, as_recorded(config))
  if changed:
    if len(changed) > _SHOWN_DIFFERENCES:
      changed = changed[:_SHOWN_DIFFERENCES] + [
          f'and {len(changed) - _SHOWN_DIFFERENCES} more']
    raise run_dir_lib.RunDirError(
        f'--resume of {run_dir}: these settings differ from the run\'s '
        f'config.json: {", ".join(changed)}')
  return dataclasses.replace(config, resume_point=saved_state.plan(run_dir))


def as_recorded(config: RunConfig) -> Dict[str, Any]:
  """`config` as config.json holds it (tuples read back as lists)."""
  return json.loads(json.dumps(dataclasses.asdict(config), default=str))


def differences(recorded: Dict[str, Any],
                current: Dict[str, Any]) -> List[str]:
  """'name (old -> new)' for every IDENTITY setting that differs."""
  changed = []
  for key in IDENTITY:
    old = dict(_leaves(key, recorded.get(key, _ABSENT)))
    new = dict(_leaves(key, current.get(key, _ABSENT)))
    for name in list(new) + [name for name in old if name not in new]:
      if name in MUTABLE or name in DERIVED:
        continue
      before, after = old.get(name, _ABSENT), new.get(name, _ABSENT)
      if name == 'preset' and before is _ABSENT:
        continue  # Recorded before the preset was: agent_config checks it.
      if before != after:
        changed.append(f'{name} ({before!r} -> {after!r})')
  return changed


def _leaves(name: str, value: Any) -> Iterator[Tuple[str, Any]]:
  """Dotted names of nested settings (compression.kind, agent_config.*)."""
  if isinstance(value, dict):
    for key, item in value.items():
      yield from _leaves(f'{name}.{key}', item)
  else:
    yield name, value


def _recorded(run_dir: str) -> Dict[str, Any]:
  path = os.path.join(run_dir, run_dir_lib.CONFIG_JSON)
  try:
    with open(path) as handle:
      recorded = json.load(handle)['run']
  except (OSError, ValueError, KeyError, TypeError) as error:
    raise run_dir_lib.RunDirError(
        f'--resume of {run_dir}: cannot read the run\'s settings from {path} '
        f'({error!r})') from error
  if not isinstance(recorded, dict):
    raise run_dir_lib.RunDirError(
        f'--resume of {run_dir}: {path} has no run settings')
  return recorded

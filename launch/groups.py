"""The program's node groups (launch/program.py builds them) and what a
node's death means for the run.

restartable: restarted up to --max_restarts times (their state is the
  learner's or is rebuilt: actors, the evaluator, the quantizer);
service: serve the others until the second stop wave (replay, counter);
fatal: the learner, whose death fails the run.
A service's death fails the run too.
"""
RESTARTABLE, SERVICE, FATAL = 'restartable', 'service', 'fatal'

ROLES = {
    'replay': SERVICE,
    'counter': SERVICE,
    'learner': FATAL,
    'quantizer': RESTARTABLE,
    'actor': RESTARTABLE,
    'evaluator': RESTARTABLE,
}
GROUPS = tuple(ROLES)


def group_of(node_name: str) -> str:
  """'actor_3' -> 'actor': nodes are named GROUP or GROUP_INDEX."""
  group = node_name.split('_')[0]
  if group not in ROLES:
    raise ValueError(f'node {node_name!r} is in no group of {GROUPS}')
  return group


def restartable(group: str) -> bool:
  return ROLES[group] == RESTARTABLE


def service(group: str) -> bool:
  return ROLES[group] == SERVICE

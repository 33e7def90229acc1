"""Which machine of a Ray cluster runs which node group
(launch/runtime/ray_cluster.py), from Ray's node records; the cluster
itself runs in tests/integration/test_netns_cluster.py."""
from launch.runtime import ray_cluster

GROUPS = ('replay', 'counter', 'learner', 'quantizer', 'evaluator', 'actor')


def _node(ip, **resources):
  return {'NodeID': f'id-{ip}', 'NodeManagerAddress': ip,
          'Resources': {'CPU': 2.0, **resources}}


def _addresses(machines):
  return {group: [n['NodeManagerAddress'] for n in nodes]
          for group, nodes in machines.items()}


def test_declared_resources_place_each_group():
  alive = [_node('10.0.0.3', quarl_actor=1), _node('10.0.0.9', quarl_actor=1),
           _node('10.0.0.1', quarl_replay=1, quarl_counter=1,
                 quarl_learner=1, quarl_quantizer=1, quarl_evaluator=1)]
  machines = _addresses(ray_cluster._machines_for(GROUPS, alive, '10.0.0.9'))  # pylint: disable=protected-access
  assert machines['actor'] == ['10.0.0.3', '10.0.0.9']
  for group in ('replay', 'counter', 'learner', 'quantizer', 'evaluator'):
    assert machines[group] == ['10.0.0.1'], group


def test_undeclared_groups_run_on_the_drivers_machine_and_actors_elsewhere():
  alive = [_node('10.0.0.2'), _node('10.0.0.1'), _node('10.0.0.3')]
  machines = _addresses(ray_cluster._machines_for(GROUPS, alive, '10.0.0.2'))  # pylint: disable=protected-access
  assert machines['learner'] == machines['replay'] == ['10.0.0.2']
  assert machines['actor'] == ['10.0.0.1', '10.0.0.3']
  # A driver outside the cluster: the first machine stands in for it.
  machines = _addresses(ray_cluster._machines_for(GROUPS, alive, '10.9.9.9'))  # pylint: disable=protected-access
  assert machines['learner'] == ['10.0.0.1']
  assert machines['actor'] == ['10.0.0.2', '10.0.0.3']


def test_a_one_machine_cluster_runs_everything():
  machines = _addresses(ray_cluster._machines_for(  # pylint: disable=protected-access
      GROUPS, [_node('10.0.0.1')], '10.0.0.1'))
  assert all(m == ['10.0.0.1'] for m in machines.values())


def test_the_driver_address_is_the_one_that_reaches_the_head():
  assert ray_cluster.reach_address('127.0.0.1:6379') == '127.0.0.1'

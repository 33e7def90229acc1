"""Hosts files: good ones place every node group, bad ones fail in one line."""
import json

import pytest

from launch.runtime import hosts

GOOD_YAML = """\
# Which machine runs which node group.
hosts:
  h1: {address: 10.213.0.1, prefix: "ip netns exec quarl-h1"}
  h2: {address: 10.213.0.2, prefix: [ip, netns, exec, quarl-h2]}
  h3: {address: worker3.example.org, prefix: "ssh -o 'BatchMode yes' w3"}
  h4: {address: "fd00::4"}
groups:
  replay: h1
  counter: h1
  learner: h1
  quantizer: h1
  evaluator: h4
  actor: [h2, h3]   # round-robin
"""
NO_QUANTIZER = [group for group in hosts.GROUPS if group != 'quantizer']


def _write(tmp_path, text, name='hosts.yaml'):
  path = tmp_path / name
  path.write_text(text)
  return str(path)


def _hosts_yaml(hosts_block, groups_block='replay: h1\n  counter: h1\n'
                '  learner: h1\n  quantizer: h1\n  evaluator: h1\n'
                '  actor: h1'):
  return f'hosts:\n  {hosts_block}\ngroups:\n  {groups_block}\n'


def test_good_yaml(tmp_path):
  plan = hosts.load(_write(tmp_path, GOOD_YAML), hosts.GROUPS)
  assert plan.hosts['h1'] == hosts.Host(
      'h1', '10.213.0.1', ('ip', 'netns', 'exec', 'quarl-h1'))
  assert plan.hosts['h2'].prefix == ('ip', 'netns', 'exec', 'quarl-h2')
  assert plan.hosts['h3'].prefix == ('ssh', '-o', 'BatchMode yes', 'w3')
  assert plan.hosts['h4'] == hosts.Host('h4', 'fd00::4', ())
  assert plan.groups == {'replay': ('h1',), 'counter': ('h1',),
                         'learner': ('h1',), 'quantizer': ('h1',),
                         'evaluator': ('h4',), 'actor': ('h2', 'h3')}


def test_good_json(tmp_path):
  document = {
      'hosts': {'a': {'address': '10.0.0.1'},
                'b': {'address': 'b.local', 'prefix': 'ssh b'}},
      'groups': {'replay': 'a', 'counter': ['a'], 'learner': 'a',
                 'evaluator': 'b', 'actor': ['a', 'b']}}
  plan = hosts.load(_write(tmp_path, json.dumps(document), 'hosts.json'),
                    NO_QUANTIZER)
  assert plan.hosts['a'].prefix == ()
  assert plan.hosts['b'].prefix == ('ssh', 'b')
  assert plan.host_for('actor', 1).name == 'b'
  assert 'quantizer' not in plan.groups


def test_round_robin_placement(tmp_path):
  plan = hosts.load(_write(tmp_path, GOOD_YAML), hosts.GROUPS)
  assert [plan.host_for('actor', i).name for i in range(5)] == [
      'h2', 'h3', 'h2', 'h3', 'h2']
  assert plan.host_for('learner', 0).address == '10.213.0.1'
  assert plan.host_for('evaluator', 3).name == 'h4'


def test_groups_the_program_lacks_are_ignored(tmp_path):
  plan = hosts.load(_write(tmp_path, GOOD_YAML), NO_QUANTIZER)
  assert set(plan.groups) == set(NO_QUANTIZER)


def test_local_plan():
  plan = hosts.local_plan()
  local = hosts.Host('localhost', 'localhost', ())
  assert set(plan.groups) == set(hosts.GROUPS)
  assert all(plan.host_for(group, 7) == local for group in hosts.GROUPS)
  assert set(hosts.local_plan(['replay', 'actor']).groups) == {'replay',
                                                                'actor'}


H1 = 'h1: {address: 10.213.0.1}'
BAD_FILES = [
    ('hosts.txt', _hosts_yaml(H1), "unknown extension '.txt'"),
    ('hosts.yaml', 'hosts: [unclosed\n  x: {', 'invalid YAML at line'),
    ('hosts.json', '{"hosts": {', 'invalid JSON at line 1'),
    ('hosts.yaml', '', 'top level must be a mapping'),
    ('hosts.yaml', '- h1\n- h2\n', 'top level must be a mapping'),
    ('hosts.yaml', 'groups:\n  replay: h1\n', "non-empty mapping 'hosts'"),
    ('hosts.yaml', f'hosts:\n  {H1}\n', "non-empty mapping 'groups'"),
    ('hosts.yaml', _hosts_yaml(H1) + 'extra: 1\n', "unknown key 'extra'"),
    ('hosts.yaml', _hosts_yaml(H1, 'foo: h1'), "unknown group 'foo'"),
    ('hosts.yaml', _hosts_yaml(H1, 'replay: h1'), "group 'counter' has no"),
    ('hosts.yaml', _hosts_yaml(H1, 'actor: []'), "group 'replay' has no"),
    ('hosts.yaml', _hosts_yaml(H1, 'actor: [h1, h9]'),
     "group 'actor' names undefined host 'h9'"),
    ('hosts.yaml', _hosts_yaml(H1, 'actor: {h1: 1}'),
     "group 'actor' must name a host or a list"),
    ('hosts.yaml', _hosts_yaml('h1: {prefix: ssh a}'), "'h1' has no address"),
    ('hosts.yaml', _hosts_yaml('h1: 10.213.0.1'), "'h1' must be a mapping"),
    ('hosts.yaml', _hosts_yaml('h1: {address: a, adress: b}'),
     "unknown key 'adress'"),
    ('hosts.yaml', _hosts_yaml(f'{H1}\n  h2: {{address: 10.213.0.1}}'),
     "duplicate address '10.213.0.1'"),
    ('hosts.yaml', _hosts_yaml('h1: {address: Node.lan}\n  '
                               'h2: {address: node.lan.}'),
     "duplicate address 'node.lan.'"),
    ('hosts.yaml', _hosts_yaml('h1: {address: a, prefix: 3}'),
     'prefix must be a string or a list of strings'),
    ('hosts.yaml', _hosts_yaml('h1: {address: a, prefix: [ssh, 3]}'),
     'prefix must be a string or a list of strings'),
    ('hosts.yaml', _hosts_yaml("h1: {address: a, prefix: \"ssh 'a\"}"),
     'No closing quotation'),
    ('hosts.yaml', _hosts_yaml('h1: {address: 10.213.0.1:8000}'),
     'is not a hostname or an IP address'),
    ('hosts.yaml', _hosts_yaml('h1: {address: 10.213.0.300}'),
     'is not a hostname or an IP address'),
    ('hosts.yaml', _hosts_yaml('h1: {address: "ssh://w1"}'),
     'is not a hostname or an IP address'),
    ('hosts.yaml', _hosts_yaml('h1: {address: "-bad.lan"}'),
     'is not a hostname or an IP address'),
    ('hosts.yaml', _hosts_yaml('h1: {address: "a b"}'),
     'is not a hostname or an IP address'),
    ('hosts.yaml', _hosts_yaml('h1: {address: 0.0.0.0}'),
     'is not a hostname or an IP address'),
    ('hosts.yaml', _hosts_yaml('h1: {address: 10.5}'),
     'is not a hostname or an IP address'),
    ('hosts.yaml', _hosts_yaml(f'{H1}\n  h2: {{address: 127.0.0.1}}'),
     "'h2': address '127.0.0.1' is loopback"),
    ('hosts.yaml', _hosts_yaml(f'{H1}\n  h2: {{address: localhost}}'),
     "'h2': address 'localhost' is loopback"),
]


@pytest.mark.parametrize('name, text, problem', BAD_FILES)
def test_bad_file_fails_in_one_line(tmp_path, name, text, problem):
  path = _write(tmp_path, text, name)
  with pytest.raises(hosts.HostsFileError) as raised:
    hosts.load(path, hosts.GROUPS)
  message = str(raised.value)
  assert problem in message
  assert message.startswith(f'hosts file {path}: ')
  assert '\n' not in message


def test_missing_or_unreadable_file(tmp_path):
  (tmp_path / 'dir.yaml').mkdir()
  for name, reason in (('missing.yaml', 'No such file or directory'),
                       ('dir.yaml', 'Is a directory')):
    path = str(tmp_path / name)
    with pytest.raises(hosts.HostsFileError) as raised:
      hosts.load(path, hosts.GROUPS)
    assert str(raised.value) == f'hosts file {path}: cannot read it ({reason})'


def test_one_host_may_be_loopback(tmp_path):
  plan = hosts.load(_write(tmp_path, _hosts_yaml(
      'h1: {address: 127.0.0.1}')), hosts.GROUPS)
  assert plan.host_for('actor', 0).address == '127.0.0.1'


@pytest.mark.parametrize('word', ['/shared/a;touch /tmp/PWNED;', '/a b',
                                  '$(id)', '`id`', 'a|b', "it's"])
def test_no_word_a_remote_shell_would_parse_goes_through_a_prefix(word):
  with pytest.raises(hosts.HostsFileError) as raised:
    hosts.through_prefix(['ssh', 'w2'], '/work', {'TMPDIR': word},
                         ['python', '-m', 'launch.train'])
  assert 'parsed again by a remote shell' in str(raised.value)
  with pytest.raises(hosts.HostsFileError):
    hosts.through_prefix(['ssh', 'w2'], '/work', {},
                         ['python', f'--run_dir={word}'])
  # Without a prefix nothing is parsed again: the words go as they are.
  assert hosts.through_prefix([], '/work', {'TMPDIR': word},
                              ['python']) == ['python']


def test_safe_words_go_through_unchanged():
  assert hosts.through_prefix(
      ['ssh', 'w2'], '/work/x', {'A': 'b=c', 'E': ''},
      ['python', '--run_dir=/shared/run-1.0', '--env=dm_control:a:b']) == [
          'ssh', 'w2', 'env', '-C', '/work/x', 'A=b=c', 'E=', 'python',
          '--run_dir=/shared/run-1.0', '--env=dm_control:a:b']

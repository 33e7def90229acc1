"""The documented commands and flags exist: README.md's and the docs pages'
that show commands (the flag tables themselves are generated, see
tests/unit/test_settings.py)."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


# A flag as written: --name or --prefix.name (e.g. --td3.batch_size), not a
# placeholder such as --AGENT.FIELD.
_FLAG = r'--([a-z_0-9]+(?:\.[a-z_0-9]+)?)(?![A-Za-z_0-9.-])'


# Pages about launch.train: a backquoted --flag there is one of its flags.
TRAIN_PAGES = ('README.md', 'docs/cli.md', 'docs/run_directory.md',
               'docs/faults.md', 'docs/multi_machine.md', 'docs/benchmarks.md')
# Pages whose `python -m MODULE --flags` commands are checked against MODULE.
COMMAND_PAGES = TRAIN_PAGES + ('docs/index.md', 'docs/actorq.md',
                               'docs/gst.md', 'docs/notebooks.md')


def _read(paths):
    text = []
    for path in paths:
        with open(os.path.join(ROOT, path)) as handle:
            text.append(handle.read())
    return '\n'.join(text)


def _readme():
    return _read(COMMAND_PAGES)


def _help(module):
    env = dict(os.environ, MUJOCO_GL='disable', TF_CPP_MIN_LOG_LEVEL='3')
    return subprocess.run([sys.executable, '-m', module, '--helpfull'],
                          capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=env).stdout


# A script's --train_args value: launch.train flags passed through.
_TRAIN_ARGS = r"""--train_args=('[^']*'|"[^"]*"|\S+)"""


def _documented_flags(module, text):
    """--flags on README lines (and their continuations) running `module`;
    those inside a --train_args value are launch.train's, not its own."""
    flags = set()
    for command in re.findall(rf'python -m {re.escape(module)}((?:.*\\\n)*.*)',
                              text):
        flags.update(re.findall(
            _FLAG, re.sub(_TRAIN_ARGS, '--train_args', command)))
    return flags


def _train_args_flags(text):
    return {flag for value in re.findall(_TRAIN_ARGS, text)
            for flag in re.findall(_FLAG, value)}


def test_readme_make_targets_exist():
    with open(os.path.join(ROOT, 'Makefile')) as handle:
        makefile = handle.read()
    for target in re.findall(r'make ([a-z-]+)', _readme()):
        assert re.search(rf'^{target}:', makefile, re.M), target


def test_readme_flags_exist_in_each_cli():
    text = _readme()
    # Pages about launch.train name its flags with backquotes.
    table_flags = set(re.findall('`' + _FLAG, _read(TRAIN_PAGES)))
    modules = ('launch.train', 'launch.reproduce_actorq', 'launch.reproduce_gst',
               'launch.classify', 'launch.reproduce_classify')
    checked = set()
    for module in modules:
        flags = _documented_flags(module, text)
        if module == 'launch.train':
            flags |= table_flags | _train_args_flags(text)
        assert flags, module
        help_text = _help(module)
        for flag in flags:
            assert re.search(rf'--(\[no\])?{flag}:', help_text), (module, flag)
        checked |= flags
    assert {'agent', 'env', 'actor_precision', 'compression.kind',
            'td3.batch_size', 'full'} <= checked


def test_readme_is_a_front_page():
    with open(os.path.join(ROOT, 'README.md')) as handle:
        readme = handle.read()
    assert len(readme.splitlines()) <= 200
    for command in ('make demo', 'make test'):
        assert command in readme, command
    assert '@article{krishnan2019quarl' in readme

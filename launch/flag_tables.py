"""The flag tables of docs/flags.md, written from launch.train's flag groups.

`python -m launch.flag_tables` rewrites them; with --check it only reports
the stale ones (tests/unit/test_settings.py fails on any).
"""
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple


def markdown(rows: Sequence[Tuple[str, str, str]]) -> str:
  lines = ['| flag | default | meaning |', '|---|---|---|']
  for flag, default, help_text in rows:
    shown = f'`{default}`' if default else ''
    lines.append(f'| `{flag}` | {shown} | {help_text.replace("|", "/")} |')
  return '\n'.join(lines) + '\n'


# The generated tables: file -> marker name -> the groups' rows.
BEGIN, END = '<!-- flags:{}: begin -->', '<!-- flags:{}: end -->'


def replace_between(text: str, marker: str, body: str) -> str:
  begin, end = BEGIN.format(marker), END.format(marker)
  head, found, rest = text.partition(begin)
  if not found or end not in rest:
    raise ValueError(f'no {begin} ... {end} markers')
  return head + begin + '\n' + body + end + rest.partition(end)[2]


def tables() -> Dict[str, Dict[str, str]]:
  """{path relative to the repo: {marker: markdown}} for every flag table."""
  # Here, not at the top: importing train defines its flags, which only the
  # writer needs (a test of the markers must not collide with other CLIs).
  from launch import train  # pylint: disable=g-import-not-at-top
  run_rows = train.FLAGS.run.rows()
  compression_rows = train.FLAGS.compression.rows()
  agent_tables = {f'agent:{name}': markdown(group.rows())
                  for name, group in sorted(train.FLAGS.agents.items())}
  return {
      os.path.join('docs', 'flags.md'): {
          'run': markdown(run_rows), 'compression': markdown(compression_rows),
          **agent_tables},
  }


def write_tables(root: str, check: bool = False) -> List[str]:
  """Rewrites the tables under `root`; the paths that were stale. With
  `check`, writes nothing."""
  stale = []
  for path, bodies in tables().items():
    full = os.path.join(root, path)
    with open(full) as f:
      text = f.read()
    new = text
    for marker, body in bodies.items():
      new = replace_between(new, marker, body)
    if new != text:
      stale.append(path)
      if not check:
        with open(full, 'w') as f:
          f.write(new)
  return stale


def main(argv: Optional[List[str]] = None) -> int:
  argv = sys.argv if argv is None else argv
  check = '--check' in argv[1:]
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  stale = write_tables(root, check=check)
  verb = 'stale' if check else 'rewritten'
  print(f'flag tables {verb}: {", ".join(stale) or "none"}')
  return 1 if check and stale else 0


if __name__ == '__main__':
  sys.exit(main())

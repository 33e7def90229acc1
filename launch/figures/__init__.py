"""Figures the notebooks show, computed by the project's own interpreter.

Each submodule is a CLI that writes CSV tables and PNG plots into --out:

  python -m launch.figures.quantization --out=runs/figures/quantization
  python -m launch.figures.gst --out=runs/figures/gst

so that a notebook kernel without the stack (Colab's Python is newer than
3.10, which dm-launchpad needs) shows the same results with pandas alone.
"""
import csv
import os
import sys
from typing import Dict, Sequence

from launch import cli


def run(main) -> None:
  """cli.run_main under the module's name (gst, quantization)."""
  cli.run_main(main, _prog())


def _prog() -> str:
  return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def usage_error(message: str) -> None:
  cli.usage_exit(_prog(), message)


def positive(flag: str, value) -> None:
  if value <= 0:
    usage_error(f'--{flag}={value} must be > 0')


def parse_layers(flag: str, text: str) -> tuple:
  try:
    return cli.parse_layers(flag, text)
  except cli.UsageError as error:
    usage_error(str(error))


def out_dir(path: str) -> str:
  """--out, created; a path that cannot be a directory is a usage error."""
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as error:
    usage_error(f'--out={path}: {error.strerror}')
  return path


def write_csv(out: str, name: str, rows: Sequence[Dict]) -> None:
  """Rows may differ in keys (e.g. one controller reports more): all kept."""
  fields = list(dict.fromkeys(key for row in rows for key in row))
  with open(os.path.join(out, name), 'w', newline='') as handle:
    writer = csv.DictWriter(handle, fields)
    writer.writeheader()
    writer.writerows(rows)
  print(f'wrote {os.path.join(out, name)}')


def pyplot():
  """matplotlib.pyplot drawing to files only, whatever MPLBACKEND says."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def save_figure(figure, out: str, name: str) -> None:
  figure.tight_layout()
  figure.savefig(os.path.join(out, name), dpi=100)
  pyplot().close(figure)
  print(f'wrote {os.path.join(out, name)}')

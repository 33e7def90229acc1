"""Shared `main` of the tests/unit py_test targets: runs one file with pytest.

Bazel runs this from the runfiles tree of the test, whose root mirrors the
repository (pytest.ini included), so `import quarl` and pytest's config work
as in a plain `pytest` run from the repository root.
"""
import os
import sys

import pytest


def main(argv):
    if len(argv) < 2:
        sys.stderr.write('usage: pytest_main.py TEST_FILE [PYTEST_ARGS...]\n')
        return 2
    args = [argv[1], '-p', 'no:cacheprovider', '-q']
    # Per-test-case results for Bazel's test.xml.
    xml_output = os.environ.get('XML_OUTPUT_FILE')
    if xml_output:
        args.append('--junitxml=' + xml_output)
    test_tmpdir = os.environ.get('TEST_TMPDIR')
    if test_tmpdir:
        # Bazel gives tests no HOME, and the sandbox keeps the real one
        # read-only; matplotlib, codecarbon, TF etc. want a writable one.
        home = os.path.join(test_tmpdir, 'home')
        os.makedirs(home, exist_ok=True)
        os.environ['HOME'] = home
        # pytest's tmp_path etc. go under Bazel's per-test scratch dir.
        args.append('--basetemp=' + os.path.join(test_tmpdir, 'pytest'))
    return pytest.main(args + argv[2:])


if __name__ == '__main__':
    sys.exit(main(sys.argv))

#!/usr/bin/env bash
# Runs every unit test under Bazel, offline: `make bazel-test` calls this.
#
#   tools/bazel_test.sh [extra `bazel test` flags, e.g. --test_output=all]
#
# Needs Debian's Bazel (`apt-get install -y bazel-bootstrap`, 4.2.3) and the
# project's virtualenv at .venv (the Makefile builds it from
# requirements/lock.txt); the py_tests run with .venv/bin/python.
#
# Nothing is downloaded: WORKSPACE replaces the repositories Bazel would fetch
# with stand-ins under third_party/bazel/, and .bazelrc disables downloading.
# Bazel's output base lives under /tmp/quarl-bazel/ (set in .bazelrc, one per
# checkout path); `bazel clean --expunge` removes it. Under CI (CI set) the
# Bazel server is shut down afterwards so no JVM outlives the run.
#
# Exits with Bazel's status (0: all passed, 3: a test failed, 4: no tests).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

if ! command -v bazel >/dev/null 2>&1; then
  echo "bazel_test.sh: 'bazel' is not installed." >&2
  echo "  Install Debian's Bazel 4.2 (no download needed):" >&2
  echo "    apt-get update && apt-get install -y bazel-bootstrap" >&2
  exit 2
fi
if [[ -z "${QUARL_BAZEL_PYTHON:-}" && ! -x .venv/bin/python ]]; then
  echo "bazel_test.sh: no virtualenv at $(pwd)/.venv; the py_tests run with" >&2
  echo "  .venv/bin/python. Create it with the Makefile first (it installs" >&2
  echo "  requirements/lock.txt), or set QUARL_BAZEL_PYTHON to an interpreter." >&2
  exit 2
fi

start=$SECONDS
log=$(mktemp "${TMPDIR:-/tmp}/quarl-bazel-test.XXXXXX.log")
trap 'rm -f "$log"' EXIT

echo "bazel_test.sh: bazel test //tests/unit/... (offline; output base under /tmp/quarl-bazel)"
bazel test //tests/unit/... --show_progress_rate_limit=30 "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# Zero downloads, checked rather than assumed.
if grep -q -E "Download from|download is disabled" "$log"; then
  echo "bazel_test.sh: Bazel tried to download something; the offline stand-ins in" >&2
  echo "  WORKSPACE / third_party/bazel/ need extending:" >&2
  grep -E "Download from|download is disabled" "$log" | head -5 >&2
  [[ $status -eq 0 ]] && status=1
fi

# The closing line: pytest test-case counts of the targets just run, read
# from each target's test.xml (written by pytest via XML_OUTPUT_FILE).
counts=""
testlogs=$(bazel info bazel-testlogs 2>/dev/null)
if [[ -n "$testlogs" ]]; then
  counts=$(grep -o -E '^//tests/unit:[^ ]+' "$log" | sort -u | sed 's|^//||; s|:|/|' |
    while read -r target; do echo "$testlogs/$target/test.xml"; done |
    "${QUARL_BAZEL_PYTHON:-.venv/bin/python}" -c '
import sys
import xml.etree.ElementTree as ET
passed = failed = skipped = 0
for path in sys.stdin.read().split():
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        failed += 1  # no readable result: count the target as failed
        continue
    for suite in root.iter("testsuite"):
        if suite.find("testsuite") is not None:
            continue  # only leaf suites carry test cases
        n = int(suite.get("tests", 0))
        bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skip = int(suite.get("skipped", 0))
        failed += bad
        skipped += skip
        passed += n - bad - skip
print(f"bazel: {passed} passed, {failed} failed, {skipped} skipped")
') || counts=""
fi

if [[ -n "${CI:-}" ]]; then
  bazel shutdown >/dev/null 2>&1 || true
fi
echo "bazel_test.sh: exit ${status} after $((SECONDS - start))s"
[[ -n "$counts" ]] && echo "$counts"
exit "$status"

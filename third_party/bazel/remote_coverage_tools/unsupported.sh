#!/bin/sh
echo "bazel coverage is not supported in the offline QuaRL-GST build" >&2
exit 1

#!/usr/bin/env bash
# Everything the tests need on a fresh machine, then the tests.
# Extra arguments go to pytest (e.g. tools/test.sh -k header, or
# tools/test.sh -m "not tracer" for the part that needs no tracer).
#   tools/test.sh --explore   property tests draw fresh examples, ten times as
#                             many; keep each failure found as an @example
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--explore" ]; then
    shift
    export HYPOTHESIS_PROFILE=explore
    set -- -m hypothesis "$@"
fi
tools/setup.sh --test
ulimit -l unlimited 2>/dev/null || true   # bpftrace: no RLIMIT_MEMLOCK warning
.venv/bin/probegen check
exec .venv/bin/python -m pytest -q -n 2 --dist loadgroup "$@"

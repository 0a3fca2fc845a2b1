#!/usr/bin/env bash
# Everything the tests need on a fresh machine, then the tests.
# Extra arguments go to pytest (e.g. tools/test.sh -k header).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --test
ulimit -l unlimited 2>/dev/null || true   # bpftrace: no RLIMIT_MEMLOCK warning
.venv/bin/probegen check
exec .venv/bin/python -m pytest -q "$@"

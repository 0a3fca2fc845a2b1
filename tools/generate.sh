#!/usr/bin/env bash
# Install probegen in a virtual environment and generate every output the
# default catalog (probes.yaml) configures.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec .venv/bin/probegen generate --catalog probes.yaml "$@"

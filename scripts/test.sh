#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite. CI runs exactly this (.ci/run).
# The tests run in AGENTGYM_TEST_WORKERS pytest-xdist processes (default: one per core, at most 4;
# most tests wait on servers and subprocesses, so two workers on 2 cores take about 2/3 of the time;
# conftest.py keeps the packaging tests on one worker).
# AGENTGYM_TEST_WORKERS=0 runs them in this one process (for -s, --pdb or -x). Extra arguments go
# to pytest: bash scripts/test.sh -k rollout
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cores=$(nproc 2>/dev/null || echo 2)
workers=${AGENTGYM_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}
if [ "$workers" = "0" ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
exec .venv/bin/python -m pytest -q -n "$workers" "$@"

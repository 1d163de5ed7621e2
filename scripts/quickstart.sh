#!/usr/bin/env bash
# The README's main command: set up, then train SmolLM2-135M-Instruct on BabyAI on this CPU,
# evaluating on held-out tasks before and after (results in runs/quickstart/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/agentgym train -c configs/quickstart.yaml "$@"

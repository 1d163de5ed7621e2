#!/usr/bin/env bash
# The README's main command: set up, then train SmolLM2-135M-Instruct on BabyAI on this CPU,
# evaluating on held-out tasks before and after (results in runs/quickstart/).
# Each run replaces the previous quickstart run (run.overwrite=true); pass run.name=NAME to
# keep it, or --resume runs/quickstart to continue it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
case " $* " in
  *" --resume"*) ;;
  *) echo "[quickstart] run.overwrite=true: an earlier run in the same folder (runs/quickstart, or run.name=... if you pass one) is replaced" >&2 ;;
esac
exec .venv/bin/agentgym train -c configs/quickstart.yaml run.overwrite=true "$@"

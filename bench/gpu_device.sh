#!/usr/bin/env bash
# bench/gpu.py on a lent GPU machine, in one call. That machine has torch, transformers,
# accelerate and peft but no network and no bundled model package, so this runs our packages
# from the checkout (PYTHONPATH) and reads the tokenizer from .tok/, carried from here:
#
#   .venv/bin/python -c "import shutil; from agentgym_hf.convert import resolve_tokenizer_path as r; shutil.copytree(r('smollm2-135m-instruct'), '.tok', ignore=shutil.ignore_patterns('*.safetensors', '.complete'), dirs_exist_ok=True)"
#   mkdir -p .git/info && (grep -qx /.tok/ .git/info/exclude 2>/dev/null || echo /.tok/ >> .git/info/exclude)
#   device run: command "bash bench/gpu_device.sh", carry [".tok"], timeout_s 540
#
# Extra arguments go to bench/gpu.py (--smoke checks this script on a CPU machine). The default run
# (135M and ~0.5B shapes, batch 64 and 256, plain and static decode, HF generate references, training)
# is sized for the 8-minute device call; pass --shapes / --batches / --hf-static-batches '' to trim it.
# Writes $OUT/gpu_bench.json and $OUT/gpu_bench.log.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-/tmp/agentgym-gpu-bench}
mkdir -p "$OUT"
export PYTHONPATH="$PWD:$PWD/plugins/libs/hf:$PWD/plugins/engines/hf:$PWD/plugins/trainers/rl${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 OUT
if [ ! -f .tok/tokenizer.json ]; then
    echo "bench/gpu_device.sh: .tok/tokenizer.json is missing; copy the tokenizer as the comment at the top says" >&2
    exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu_bench.log"
"$PYTHON" -c "import torch, transformers, accelerate, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$OUT/gpu_bench.log"
"$PYTHON" bench/gpu.py --tokenizer .tok "$@" 2>&1 | tee -a "$OUT/gpu_bench.log"

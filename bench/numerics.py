"""What the machine changes in the numbers: the same model and tokens under each CPU numeric path.

    python bench/numerics.py [--model smollm2-135m-instruct] [--record]

Each setting runs in a fresh process (the environment variables that pick a numeric path are read
when torch starts): the bundled SmolLM2-135M-Instruct scores one fixed 128-token BabyAI-style
chat (log-probs of every token, one forward pass) and decodes 48 tokens greedily from its
prompt. Against the reference (fp32, torch's own thread count, this CPU's best ISA), the table
gives the largest log-prob difference and where the greedy continuation first differs, if it does.
Settings:

* ``threads``: torch's thread count (``engine.threads`` / ``backend.threads``; 0 leaves torch's
  default, one per core);
* ``AGENTGYM_CPU_BF16``: the "native bf16" decision (``model.dtype: auto``: bf16 where the CPU has
  AVX512-BF16 or AMX, fp32 elsewhere; the trainer autocasts to bf16 likewise);
* ``ATEN_CPU_CAPABILITY``: the instruction set ATen's own kernels use (``avx512``, ``avx2``,
  ``default``): what a CPU without AVX-512 runs;
* ``ONEDNN_MAX_CPU_ISA``: the same for oneDNN's kernels (matrix products, with mkldnn).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHAT = [
    {"role": "user", "content": "You are in a room. You see a red ball 3 steps ahead and a grey key 2 steps to "
                                "your left. Your goal: go to the red ball. Reply with one action: turn left, "
                                "turn right, move forward."},
    {"role": "assistant", "content": "move forward"},
    {"role": "user", "content": "You moved forward. The red ball is 2 steps ahead. The grey key is 2 steps to your "
                                "left and 1 step behind. What do you do next?"},
]

PROBE = r'''
import json, sys, torch
from agentgym_hf.loading import load_model, resolve_dtype
spec = json.loads(sys.argv[1])
if spec["threads"]:
    torch.set_num_threads(spec["threads"])
model, tok = load_model(spec["model"], dtype=spec["dtype"])
ids = tok.apply_chat_template(spec["chat"], add_generation_prompt=True, tokenize=True)
ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
with torch.no_grad():
    x = torch.tensor([ids])
    logp = torch.log_softmax(model(x).logits[0, :-1].float(), -1).gather(1, x[0, 1:, None])[:, 0]
    out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=48, do_sample=False)[0, len(ids):]
print(json.dumps({"logp": logp.tolist(), "greedy": out.tolist(), "dtype": str(resolve_dtype(spec["dtype"], "cpu")),
                  "threads": torch.get_num_threads(), "isa": torch.backends.cpu.get_cpu_capability()}))
'''


def run(model: str, threads: int, env: dict[str, str], dtype: str = "auto") -> dict:
    spec = {"model": model, "threads": threads, "dtype": dtype, "chat": CHAT}
    full_env = {**os.environ, **env}
    for key in ("AGENTGYM_CPU_BF16", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA"):
        if key not in env:
            full_env.pop(key, None)
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(spec)], env=full_env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--record", action="store_true", help="append the table to docs/BENCHMARKS.md")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    settings = [
        ("reference: fp32, torch's threads, best ISA", 0, {"AGENTGYM_CPU_BF16": "0"}),
        ("1 thread", 1, {"AGENTGYM_CPU_BF16": "0"}),
        (f"{cores} threads (explicit)", cores, {"AGENTGYM_CPU_BF16": "0"}),
        ("ATEN_CPU_CAPABILITY=avx2", 0, {"AGENTGYM_CPU_BF16": "0", "ATEN_CPU_CAPABILITY": "avx2"}),
        ("ATEN_CPU_CAPABILITY=default", 0, {"AGENTGYM_CPU_BF16": "0", "ATEN_CPU_CAPABILITY": "default"}),
        ("ONEDNN_MAX_CPU_ISA=AVX2", 0, {"AGENTGYM_CPU_BF16": "0", "ONEDNN_MAX_CPU_ISA": "AVX2"}),
        ("AVX2 for both (a CPU without AVX-512)", 0,
         {"AGENTGYM_CPU_BF16": "0", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}),
        ("AGENTGYM_CPU_BF16=1 (dtype auto -> bf16)", 0, {"AGENTGYM_CPU_BF16": "1"}),
    ]
    ref = None
    rows = []
    for label, threads, env in settings:
        print(f"{label} ...", flush=True)
        res = run(args.model, threads, env)
        if ref is None:
            ref = res
        diff = max(abs(a - b) for a, b in zip(res["logp"], ref["logp"]))
        first = next((i for i, (a, b) in enumerate(zip(res["greedy"], ref["greedy"])) if a != b), None)
        greedy = "identical" if first is None else f"differs from token {first + 1}"
        rows.append(f"| {label} | {res['dtype'].replace('torch.', '')} | {res['threads']} | {res['isa']} | "
                    f"{diff:.2e} | {greedy} |")
        print(rows[-1], flush=True)
    table = ("| setting | dtype | torch threads | ATen ISA | max abs log-prob diff vs reference | greedy 48 tokens |\n"
             "|---|---|---:|---|---:|---|\n" + "\n".join(rows))
    print("\n" + table)
    if args.record:
        sys.path.insert(0, str(Path(__file__).parent))
        from startup import record_result

        import torch

        flags = open("/proc/cpuinfo").read()
        record_result("## Numerics", "Numeric paths on one CPU", (
            f"Machine: {platform.machine()}, {cores} cores, avx512_bf16 {'yes' if 'avx512_bf16' in flags else 'no'}, "
            f"amx_bf16 {'yes' if 'amx_bf16' in flags else 'no'}, Python {platform.python_version()}, torch "
            f"{torch.__version__}. Command: `python bench/numerics.py {' '.join(sys.argv[1:])}` ({args.model}, one "
            f"128-token chat scored in one forward pass, 48 greedy tokens; each setting in a fresh process).\n\n{table}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

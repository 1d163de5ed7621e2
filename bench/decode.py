"""Decode throughput of the hf engine: the plain path vs ``decode: static``, side by side.

    python bench/decode.py                      # SmolLM2-135M-Instruct, batch 16, CPU, 1 thread (~10 min)
    python bench/decode.py --rounds 1 --max-new-tokens 32 --requests 32

Two workloads, both greedy, each run by both engines in alternation (``--rounds`` times; the
best run of each counts, so load from other jobs on the machine hurts both alike):

* ``fixed``: ``--batch`` text continuations, every one decoding all ``--max-new-tokens``
  tokens: one batch, the decode step itself.
* ``chat``: ``--requests`` chat prompts at ``--batch`` rows, each reply ending at its own
  end-of-turn (or the token limit): the plain path decodes in batches that run until their
  longest reply ends, the static path refills a slot as soon as its reply ends.

tokens/s = generated tokens / wall seconds of the ``generate`` call (prefill included). The
greedy tokens of the two engines must be identical (checked, printed). ``--record`` appends
the table to docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

TOPICS = [f"{what} {where}" for where in ("at sea", "in a mountain village", "in the city")
          for what in ("a storm", "a robot that paints", "a lost key", "an old map", "a market at dawn", "a lighthouse",
                       "learning to swim", "the first snow", "a quiet library", "trains at night", "a small garden",
                       "a bakery", "a broken clock", "a festival", "a letter from a friend", "a long walk")]


def _requests(tok, kind: str, n: int, new_tokens: int):
    from agentgym_core.engine import GenerationRequest, SamplingParams

    greedy = SamplingParams(max_new_tokens=new_tokens, temperature=0.0)
    out = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        if kind == "fixed":
            ids = tok(f"Chapter {i + 1}. A long story about {topic}, told slowly. It begins",
                      add_special_tokens=False)["input_ids"]
        else:
            ids = tok.apply_chat_template([{"role": "user", "content": f"In one or two sentences, what do you think of {topic}?"}],
                                          add_generation_prompt=True)
            ids = ids["input_ids"] if not isinstance(ids, list) else ids
        out.append(GenerationRequest(list(ids), greedy))
    return out


def _timed(engine, requests) -> tuple[float, list]:
    start = time.perf_counter()
    results = engine.generate(requests)
    return time.perf_counter() - start, results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--requests", type=int, default=48, help="chat workload: requests in the queue")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2, help="alternating runs per engine; the best counts")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--record", action="store_true", help="append the table to docs/BENCHMARKS.md")
    args = ap.parse_args()

    import torch
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_hf.loading import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    model, tok = load_model(args.model, dtype=args.dtype, device=args.device)
    engines = {
        "plain": HFEngine(model, tok, max_batch_size=args.batch, max_cached_episodes=0),
        "static": HFEngine(model, tok, max_batch_size=args.batch, max_cached_episodes=0, decode="static"),
    }
    warm = _requests(tok, "fixed", 2, 2)
    for engine in engines.values():
        engine.generate(warm)
    workloads = {"fixed": _requests(tok, "fixed", args.batch, args.max_new_tokens),
                 "chat": _requests(tok, "chat", args.requests, args.max_new_tokens)}
    rows = []
    for name, reqs in workloads.items():
        best: dict[str, float] = {}
        tokens: dict[str, list] = {}
        for _ in range(args.rounds):
            for label, engine in engines.items():
                wall, results = _timed(engine, reqs)
                best[label] = min(best.get(label, float("inf")), wall)
                tokens[label] = [r.token_ids for r in results]
        generated = sum(len(t) for t in tokens["plain"])
        same = tokens["plain"] == tokens["static"]
        rate = {label: generated / best[label] for label in engines}
        rows.append((name, len(reqs), generated, best["plain"], rate["plain"], best["static"], rate["static"],
                     rate["static"] / rate["plain"], same))
    static = engines["static"].static
    if static.broken:
        print(f"warning: the static path fell back to the plain one: {static.broken}", file=sys.stderr)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    head = (f"`python bench/decode.py {' '.join(sys.argv[1:])}`".replace(" `", "`") + f" — {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"{platform.machine()} ({os.cpu_count()} cores, load average {load:.1f} at the end), torch {torch.__version__}, "
            f"{torch.get_num_threads()} thread(s), {args.model} {args.dtype} on {args.device}, batch {args.batch}, "
            f"max_new_tokens {args.max_new_tokens}, best of {args.rounds} alternating runs.")
    lines = [head, "",
             "| workload | requests | tokens | plain s | plain tok/s | static s | static tok/s | static / plain | same greedy tokens |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, n, gen, ps, pr, ss, sr, ratio, same in rows:
        lines.append(f"| {name} | {n} | {gen} | {ps:.1f} | {pr:.1f} | {ss:.1f} | {sr:.1f} | {ratio:.2f}x | {'yes' if same else 'NO'} |")
    text = "\n".join(lines)
    print(text)
    if args.record:
        path = Path(__file__).resolve().parents[1] / "docs" / "BENCHMARKS.md"
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"\n{text}\n")
    for engine in engines.values():
        engine.close()
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

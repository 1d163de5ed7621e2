"""Rollout and update cost vs the maximum number of turns, and what makes them grow.

    python bench/rollout_turns.py [--turns 2 4 8 16 32] [--episodes 8] [--record]

A small random-initialised Llama (SmolLM2 tokenizer and chat template) plays BabyAI; its
replies are never valid actions, so every episode runs the full horizon. Three series:

* ``full``: the whole history in the prompt, per-episode KV cache reused (the default agent).
  A turn prefills only its new tokens, but each new token (prefilled observation or decoded
  reply) still attends over the whole context, so attention work grows with T^2. The script
  measures, separately, what one more context token costs a decode step and a prefill, and
  subtracts the attention time that predicts; what remains must be linear in T.
* ``window``: ``agent.history_window=2`` (what the quickstart uses): bounded context, so the
  wall time itself must be linear; every turn past 2 re-prefills its window and is a training
  segment of its own in the update.
* ``chunked``: ``agent.context: {name: window, turns: 2, chunked: true}``: the window moves two
  turns at a time, so consecutive turns extend one context: a re-prefill and a new training
  segment once every two turns.
* ``no-reuse``: the full history with the KV cache disabled, i.e. re-prefilling the history
  every turn (what an engine without prefix reuse does), for comparison.

Each series gets a least-squares line and parabola; the table reports the share of the time
at the largest horizon that the T^2 term explains. After each rollout one GRPO update runs on its
episodes (the same tiny model, fp32): its wall time, and for the windowed series the same update
with every turn scored as a separate sequence (no shared segments, no shared prefixes), which is
what training on the sampled contexts costs without segments.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERIES = ("full", "window", "chunked", "no-reuse")


def decode_cost(model, batch: int, lengths=(512, 2048, 4096, 6144), steps: int = 6) -> tuple[float, float]:
    """Fit one decode step of *batch* rows as ``a + b * context``; returns (a, b) in seconds."""
    import numpy as np
    import torch
    from agentgym_hf.kvcache import SlabCache

    cfg = model.config
    heads, dim = cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads
    xs, ys = [], []
    with torch.no_grad():
        for n in lengths:
            layers = [(torch.randn(batch, heads, n + steps, dim), torch.randn(batch, heads, n + steps, dim), n)
                      for _ in range(cfg.num_hidden_layers)]
            cache = SlabCache(layers)
            mask = torch.ones(batch, n + steps, dtype=torch.long)
            ids = torch.zeros(batch, 1, dtype=torch.long)
            model(input_ids=ids, attention_mask=mask[:, : n + 1], position_ids=torch.full((batch, 1), n), cache=cache)
            start = time.perf_counter()
            for s in range(1, steps):
                model(input_ids=ids, attention_mask=mask[:, : n + s + 1], position_ids=torch.full((batch, 1), n + s),
                      cache=cache)
            xs.append(n)
            ys.append((time.perf_counter() - start) / (steps - 1))
    b, a = np.polyfit(xs, ys, 1)
    return float(a), float(b)


def prefill_cost(model, new: int = 128, lengths=(512, 2048, 4096, 6144), reps: int = 3) -> float:
    """Seconds that one more context token adds to prefilling *new* tokens of one row, per new token."""
    import numpy as np
    import torch
    from transformers import DynamicCache

    cfg = model.config
    heads, dim = cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads
    xs, ys = [], []
    with torch.no_grad():
        for n in lengths:
            past = [(torch.randn(1, heads, n, dim), torch.randn(1, heads, n, dim)) for _ in range(cfg.num_hidden_layers)]
            ids = torch.zeros(1, new, dtype=torch.long)
            pos = torch.arange(n, n + new)[None]
            best = float("inf")
            for _ in range(reps):
                cache = DynamicCache(ddp_cache_data=past)
                start = time.perf_counter()
                model(input_ids=ids, position_ids=pos, cache=cache, logits_to_keep=1)
                best = min(best, time.perf_counter() - start)
            xs.append(n)
            ys.append(best)
    return float(np.polyfit(xs, ys, 1)[0]) / new


def update_seconds(model, trajs, per_turn: bool = False, repeats: int = 2) -> tuple[float, int]:
    """Best-of-*repeats* seconds of one GRPO update (score, advantages, forward and backward, fp32, learning
    rate 0) on *trajs*, and the training rows it ran. *per_turn*: every turn scored as a sequence of its
    own (its context, then its reply), without shared segments or shared prefixes."""
    import copy
    import dataclasses

    import torch
    from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions
    from agentgym_trainer_rl.batch import build_batch
    from agentgym_trainer_rl.config import UpdateConfig
    from agentgym_trainer_rl.policy import PolicyModule
    from agentgym_trainer_rl.update import Updater, UpdateSettings

    from agentgym_core.rollout.segments import turn_context

    policy = PolicyModule(copy.deepcopy(model))
    policy.train()
    cfg = UpdateConfig(share_prefix=not per_turn)
    opts = UpdateSettings(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(UpdateConfig)})
    updater = Updater(policy, torch.optim.SGD(policy.parameters(), lr=0.0), ALGORITHMS["grpo"], opts,
                      EstimatorOptions())
    for t in trajs:
        t.rewards = [0.0] * (len(t.turns) - 1) + [float(t.task_id % 2)] if t.turns else []
    best, rows = float("inf"), 0
    for _ in range(repeats):
        batch = build_batch(trajs, pad_id=0)
        if per_turn:
            batch.segments = [[_turn_alone(t, k, turn_context(turn)) for k, turn in enumerate(t.turns)]
                              for t in trajs]
        rows = sum(len(s) if s else 1 for s in batch.segments) if batch.segments else len(trajs)
        start = time.perf_counter()
        updater.step(batch)
        best = min(best, time.perf_counter() - start)
    return best, rows


def _turn_alone(traj, k: int, context):
    import torch

    turn = traj.turns[k]
    positions = torch.tensor([i for a, b in context for i in range(a, b)] + list(range(turn.start, turn.end)))
    own = (positions >= turn.start) & (positions < turn.end)
    return positions, own


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--series", nargs="+", choices=SERIES, default=list(SERIES))
    ap.add_argument("--record", action="store_true", help="append the tables to docs/BENCHMARKS.md")
    args = ap.parse_args()

    import numpy as np
    import torch
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_hf.loading import load_tokenizer, tiny_random_model

    from agentgym_core.assembly import AgentSettings, RunParts
    from agentgym_core.env.launcher import open_env_pool
    from agentgym_core.plugins import get_plugin_manager
    from agentgym_core.rollout.context import ContextPolicy, WindowContext
    from agentgym_core.rollout.runner import rollout

    torch.set_num_threads(args.threads)
    tok = load_tokenizer("smollm2-135m-instruct")
    model = tiny_random_model(tok, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384)
    manager = get_plugin_manager()

    async def play(turns: int, series: str) -> dict:
        engine = HFEngine(model, tok, dtype="fp32", max_batch_size=args.episodes,
                          max_cached_episodes=0 if series == "no-reuse" else 256, share_prefixes=series != "no-reuse")
        pool = open_env_pool({"name": "babyai", "levels": ["GoToLocal"], "brief": True}, manager, local=True)
        try:
            agent = AgentSettings(action_format="free", max_new_tokens=args.max_new_tokens, temperature=1.0,
                                  concurrency=args.episodes, max_episode_tokens=1_000_000)
            context = {"window": WindowContext(turns=2), "chunked": WindowContext(turns=2, chunked=True)}.get(
                series, ContextPolicy())
            parts = RunParts(pool=pool, env=await pool.spec("babyai"), agent=agent, engine=engine, context=context)
            stats: dict = {}
            # groups of two: a GRPO group of the same task, as training plays them
            tasks = [(i // 2, i // 2) for i in range(args.episodes)]
            trajs = await rollout(parts, tasks, max_turns=turns, seed=0, stats=stats)
            # new tokens x the context they attend over: the attention work of the rollout
            decoded = sum((t.end - t.start) * (t.prompt_tokens + (t.end - t.start) / 2) for tr in trajs for t in tr.turns)
            prefilled = sum(t.prefill_tokens * (t.prompt_tokens - t.prefill_tokens / 2) for tr in trajs for t in tr.turns)
            update, rows = update_seconds(model, trajs)
            apart = update_seconds(model, trajs, per_turn=True)[0] if series in ("window", "chunked") else None
            return {"turns": turns, "played": sum(tr.num_turns for tr in trajs),
                    "tokens": sum(len(tr.token_ids) for tr in trajs),
                    "prefill": sum(tr.prefill_tokens for tr in trajs), "decoded": decoded, "prefilled": prefilled,
                    "wall": stats["wall_seconds"], "gen": stats["generate_seconds"], "update": update,
                    "rows": rows, "apart": apart, "trained": sum(tr.num_generated for tr in trajs)}
        finally:
            await pool.aclose()

    print("measuring decode step cost vs context ...", flush=True)
    a, b = decode_cost(model, args.episodes)
    per_row = b / args.episodes  # seconds per (decoded token x context token) for one row
    per_new = prefill_cost(model)  # seconds per (prefilled token x context token)
    print(f"decode step of {args.episodes} rows: {a * 1e3:.1f} ms + {b * 1e6:.2f} us per context token; "
          f"prefill: {per_new * 1e9:.1f} ns per new token per context token", flush=True)
    asyncio.run(play(2, "full"))  # warm-up
    tables, summaries = [], []
    for series in args.series:
        rows = [asyncio.run(play(t, series)) for t in args.turns]
        T = np.array([r["turns"] for r in rows], dtype=float)
        W = np.array([r["wall"] for r in rows])
        attn = np.array([per_row * r["decoded"] + per_new * r["prefilled"] for r in rows])
        lines = [f"**{series}**\n",
                 "| max turns | turns played | episode tokens | prefilled tokens | rollout wall s | s per turn "
                 "| predicted attention s | wall - attention s | update s | update s per turn | training rows "
                 "| trained tok/s | each turn apart: tok/s (ratio) |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r, at in zip(rows, attn):
            per_turn = max(r["played"] / args.episodes, 1)
            apart = "–" if r["apart"] is None else \
                f"{r['trained'] / r['apart']:.0f} ({r['apart'] / r['update']:.2f}x)"
            lines.append(f"| {r['turns']} | {r['played']} | {r['tokens']} | {r['prefill']} | {r['wall']:.2f} | "
                         f"{r['wall'] / per_turn:.3f} | {at:.2f} | {r['wall'] - at:.2f} | {r['update']:.2f} | "
                         f"{r['update'] / per_turn:.3f} | {r['rows']} | {r['trained'] / r['update']:.0f} | {apart} |")
        text = "\n".join(lines)
        summary = f"{series}: " + _fits("wall", T, W)
        if series == "full":
            summary += "; " + _fits("wall - predicted attention", T, W - attn)
        print(text + "\n\n" + summary + "\n", flush=True)
        tables.append(text)
        summaries.append(summary)
    if args.record:
        from startup import record  # bench/ is on sys.path when this runs as a script

        stamp = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
        block = (f"### Rollout wall time vs max turns, {stamp}\n\n"
                 f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                 f"torch {torch.__version__}, {args.threads} torch thread(s), load average {os.getloadavg()[0]:.1f} "
                 f"at the end. Command: `python bench/rollout_turns.py {' '.join(sys.argv[1:])}` "
                 f"({args.episodes} babyai episodes, a random 4-layer hidden-256 Llama with the SmolLM2 tokenizer, "
                 f"{args.max_new_tokens} new tokens a turn, every episode runs the full horizon). A decode step of "
                 f"{args.episodes} rows costs {a * 1e3:.1f} ms + {b * 1e6:.2f} us per context token, and a "
                 f"prefilled token {per_new * 1e9:.1f} ns per context token (`predicted attention s` = those "
                 f"slopes x the new tokens x the context each attends over). `update s`: one GRPO update (score, "
                 f"forward and backward, lr 0) on the rollout's episodes in groups of two; `each turn apart`: the "
                 f"same update with every turn its own sequence (no shared segments or prefixes), its trained "
                 f"tokens/s and its time over ours.\n\n"
                 + "\n\n".join(tables) + "\n\n" + "\n".join(f"- {s}" for s in summaries) + "\n")
        path = REPO / "docs" / "BENCHMARKS.md"
        path.write_text(record(path.read_text(), block, "## Rollout", "### Rollout wall time vs max turns"))
        print(f"recorded under '## Rollout' in {path}")
    return 0


def _fits(label: str, T, W) -> str:
    import numpy as np

    lin = np.polyfit(T, W, 1)
    quad = np.polyfit(T, W, 2)
    share = quad[0] * T[-1] ** 2 / W[-1]
    resid = np.abs(W - np.polyval(lin, T)).max()
    return (f"{label} = {lin[1]:.2f} + {lin[0]:.3f} * T s (max residual {resid:.2f} s), T^2 term "
            f"{share:.0%} of it at T = {int(T[-1])}")


if __name__ == "__main__":
    sys.exit(main())

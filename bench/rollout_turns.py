"""Rollout wall time vs the maximum number of turns: it must grow linearly, not quadratically.

    python bench/rollout_turns.py [--turns 2 4 8 16 32] [--episodes 8] [--record]

A small random-initialised Llama (SmolLM2 tokenizer and chat template) plays BabyAI; its
replies are never valid actions, so every episode runs the full horizon. With per-episode KV
cache reuse a turn costs its new tokens, so wall time should be ~ a + b*T. The script fits
both a line and a parabola by least squares and reports how much of the time at the largest
horizon the quadratic term explains.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import platform
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--record", action="store_true", help="append the table to docs/BENCHMARKS.md")
    args = ap.parse_args()

    import numpy as np
    import torch
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_engine_hf.loading import load_tokenizer, tiny_random_model

    from agentgym_core.env.launcher import open_env_pool
    from agentgym_core.plugins import get_plugin_manager
    from agentgym_core.rollout.runner import rollout

    torch.set_num_threads(args.threads)
    tok = load_tokenizer("smollm2-135m-instruct")
    model = tiny_random_model(tok, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384)
    engine = HFEngine(model, tok, dtype="fp32", max_batch_size=args.episodes)
    manager = get_plugin_manager()

    async def play(turns: int) -> tuple[float, int, int]:
        pool = open_env_pool({"name": "babyai", "levels": ["GoToLocal"], "brief": True}, manager, local=True)
        try:
            info = await pool.info()
            stats: dict = {}
            trajs = await rollout(engine, pool, [(i, i) for i in range(args.episodes)], max_turns=turns,
                                  instruction=info["instruction"], action_format="free",
                                  rollout_cfg={"max_new_tokens": args.max_new_tokens, "temperature": 1.0,
                                               "concurrency": args.episodes, "max_episode_tokens": 1_000_000},
                                  seed=0, stats=stats, env_name="babyai")
            return (stats["wall_seconds"], sum(t.num_turns for t in trajs), sum(len(t.token_ids) for t in trajs),
                    stats["generate_seconds"])
        finally:
            await pool.aclose()

    asyncio.run(play(2))  # warm-up
    rows = []
    for turns in args.turns:
        wall, played, tokens, gen = asyncio.run(play(turns))
        rows.append((turns, wall, played, tokens, gen))
    T = np.array([r[0] for r in rows], dtype=float)
    W = np.array([r[1] for r in rows])
    lin = np.polyfit(T, W, 1)
    quad = np.polyfit(T, W, 2)
    quad_share = quad[0] * T[-1] ** 2 / W[-1]
    resid = W - np.polyval(lin, T)
    lines = [
        "| max turns | turns played | episode tokens | rollout wall s | engine generate s | s per turn | linear fit s |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (turns, wall, played, tokens, gen), fit in zip(rows, np.polyval(lin, T)):
        lines.append(f"| {turns} | {played} | {tokens} | {wall:.2f} | {gen:.2f} | "
                     f"{wall / max(played / args.episodes, 1):.3f} | {fit:.2f} |")
    summary = (f"Linear fit: wall = {lin[1]:.2f} + {lin[0]:.3f} * T s (max residual {np.abs(resid).max():.2f} s). "
               f"Quadratic fit: {quad[0]:.5f} * T^2 + {quad[1]:.3f} * T + {quad[2]:.2f}; its T^2 term is "
               f"{quad_share:.1%} of the wall time at T = {int(T[-1])}.")
    text = "\n".join(lines)
    print(text)
    print(summary)
    if args.record:
        head = (f"\n### Rollout wall time vs max turns, {datetime.date.today()}\n\n"
                f"Machine: {platform.machine()}, {__import__('os').cpu_count()} cores, Python "
                f"{platform.python_version()}, torch {torch.__version__}, {args.threads} torch thread(s). Command: "
                f"`python bench/rollout_turns.py --record` ({args.episodes} babyai episodes, a random 4-layer "
                f"hidden-256 Llama with the SmolLM2 tokenizer, {args.max_new_tokens} new tokens a turn, every "
                f"episode runs the full horizon).\n\n")
        with open(REPO / "docs" / "BENCHMARKS.md", "a") as f:
            f.write(head + text + "\n\n" + summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

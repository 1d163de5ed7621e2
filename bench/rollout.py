"""Rollout throughput: async multi-episode rollout vs a generation-only loop on the same prompts.

    python bench/rollout.py                      # SmolLM2-135M, 16 babyai episodes x 2 turns, CPU (~3 min)
    python bench/rollout.py --turns 3 --max-new-tokens 24 --threads 0

Prints a table: tokens/s of the rollout (env steps, parsing, templating included) and of a
plain loop that only generates, turn by turn, for the very prompts the rollout produced
(goal: ratio >= 0.9); and prefilled tokens per episode vs its unique tokens (goal <= 1.2).
"""
from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from datetime import date


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--env", default="babyai")
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a busy shared machine; 0: torch default)")
    ap.add_argument("--servers", action="store_true", help="serve the env over HTTP (1 server) instead of in-process")
    args = ap.parse_args()

    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    if args.env not in manager.registry("envs").names():
        print(f"env {args.env!r} is not installed (see `agentgym list envs`); install its plugin or pass --env NAME")
        return 1

    import torch
    from agentgym_engine_hf.engine import HFEngine

    from agentgym_core.assembly import AgentSettings, RunParts
    from agentgym_core.engine import GenerationRequest, SamplingParams
    from agentgym_core.env.launcher import open_env_pool
    from agentgym_core.rollout.runner import rollout

    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    engine = HFEngine(args.model, dtype=args.dtype, max_batch_size=args.episodes)
    load_s = time.perf_counter() - t0

    async def play():
        pool = open_env_pool({"name": args.env}, manager, local=not args.servers)
        try:
            agent = AgentSettings(max_new_tokens=args.max_new_tokens, temperature=1.0, concurrency=args.episodes)
            parts = RunParts(pool=pool, env=await pool.spec(args.env), agent=agent, engine=engine, owns_engine=False)
            stats: dict = {}
            trajs = await rollout(parts, [(i, i) for i in range(args.episodes)], max_turns=args.turns, seed=0,
                                  stats=stats)
            return trajs, stats
        finally:
            await pool.aclose()

    trajs, stats = asyncio.run(play())
    generated = sum(t.num_generated for t in trajs)
    unique = sum(len(t.token_ids) for t in trajs)
    prefilled = sum(t.prefill_tokens for t in trajs)

    # Generation only: the same prompts, turn by turn, same batch sizes, same per-episode cache reuse.
    gen_tokens = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    for k in range(max(t.num_turns for t in trajs)):
        reqs = [
            GenerationRequest(t.token_ids[: t.turns[k].start],
                              SamplingParams(max_new_tokens=t.turns[k].end - t.turns[k].start, temperature=1.0, seed=k),
                              cache_key=t.episode_id)
            for t in trajs if len(t.turns) > k
        ]
        gen_tokens += sum(len(r.token_ids) for r in engine.generate(reqs))
    gen_s, gen_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    for t in trajs:
        engine.release(t.episode_id)

    roll_tps = generated / stats["wall_seconds"]
    gen_tps = gen_tokens / gen_s
    succ = sum(t.success for t in trajs) / len(trajs)
    print(f"# rollout bench, {date.today()}, {platform.machine()} {torch.get_num_threads()} torch threads, "
          f"python {sys.version.split()[0]}, torch {torch.__version__}")
    print(f"model {args.model} ({args.dtype}, loaded in {load_s:.1f}s), env {args.env} "
          f"({'1 HTTP server' if args.servers else 'in-process'}), {args.episodes} episodes x {args.turns} turns, "
          f"max_new_tokens {args.max_new_tokens}; success {succ:.0%}, mean turns "
          f"{sum(t.num_turns for t in trajs) / len(trajs):.2f}, mean batch {stats['mean_batch']:.1f}")
    print()
    print("| measure | value | goal |")
    print("|---|---:|---|")
    print(f"| rollout: generated tokens / wall | {generated} / {stats['wall_seconds']:.1f} s = {roll_tps:.1f} tok/s | |")
    print(f"| generation-only loop, same prompts | {gen_tokens} / {gen_s:.1f} s = {gen_tps:.1f} tok/s | |")
    print(f"| rollout / generation-only (wall) | {roll_tps / gen_tps:.2f} | >= 0.9 |")
    roll_cpu_tps, gen_cpu_tps = generated / stats["cpu_seconds"], gen_tokens / gen_cpu
    print(f"| same, per CPU second (all threads: env, parsing, templating included) | "
          f"{roll_cpu_tps:.1f} / {gen_cpu_tps:.1f} tok/CPU-s = {roll_cpu_tps / gen_cpu_tps:.2f} | >= 0.9 |")
    print(f"| engine busy share of rollout wall | {stats['generate_seconds'] / stats['wall_seconds']:.0%} | |")
    print(f"| machine share this process got (CPU s / wall s), rollout vs loop | "
          f"{stats['cpu_seconds'] / stats['wall_seconds']:.2f} vs {gen_cpu / gen_s:.2f} | |")
    print(f"| prefilled tokens / unique episode tokens | {prefilled} / {unique} = {prefilled / unique:.2f} | <= 1.2 |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

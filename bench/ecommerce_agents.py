"""ecommerce: success of the scripted reference agent and of a random agent, per intent, on a split.

    python bench/ecommerce_agents.py                  # test split, in-process and over HTTP
    python bench/ecommerce_agents.py --split train --modes in-process

The reference agent reads only the observations (asks, looks up, checks the policy,
confirms, acts, tells; or refuses); the refusing agent identifies the customer, looks at
the order and refuses whatever was asked (what doing nothing scores); the random agent
calls a uniformly random tool with ids seen so far, or says a canned line. Over HTTP, one ``agentgym env serve ecommerce``
process is started and 16 sessions play concurrently with numbered steps, as rollout does.
Prints a Markdown table for docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import time
from datetime import datetime, timezone


AGENTS = ("reference", "refusing", "random")


def measure(mode: str, agent: str, ids: list[int], options: dict) -> dict:
    from agentgym_core.env.client import HTTPEnvPool
    from agentgym_core.env.launcher import EnvLauncher
    from agentgym_core.env.pool import LocalEnvPool
    from agentgym_env_ecommerce.agents import RandomAgent, ReferenceAgent, RefusingAgent, play_pool
    from agentgym_env_ecommerce.env import ECommerceServiceEnv

    def make(task_id: int):
        if agent == "random":
            return RandomAgent(random.Random(task_id))
        return ReferenceAgent() if agent == "reference" else RefusingAgent()

    async def play(pool) -> dict:
        async with pool:
            return await play_pool(pool, ids, make)

    start = time.perf_counter()
    if mode == "http":
        with EnvLauncher("ecommerce", options=options) as launcher:
            start = time.perf_counter()
            results = asyncio.run(play(HTTPEnvPool(launcher.urls)))
    else:
        results = asyncio.run(play(LocalEnvPool(lambda: ECommerceServiceEnv(**options), name="ecommerce")))
    secs = time.perf_counter() - start
    env = ECommerceServiceEnv(**options)
    by_intent: dict[str, list[float]] = {}
    for task_id, (reward, _) in results.items():
        by_intent.setdefault(env.category(task_id), []).append(reward)
    return {"mode": mode, "agent": agent, "tasks": len(ids), "secs": secs,
            "success": statistics.mean(r for r, _ in results.values()),
            "turns": statistics.mean(info["turns"] for _, info in results.values()),
            "intents": {k: statistics.mean(v) for k, v in by_intent.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="test")
    parser.add_argument("--modes", default="in-process,http", help="comma-separated: in-process, http")
    parser.add_argument("--limit", type=int, default=0, help="first N tasks of the split (0: all)")
    args = parser.parse_args()
    from agentgym_env_ecommerce.env import ECommerceServiceEnv
    from agentgym_env_ecommerce.scenarios import INTENTS

    ids = list(ECommerceServiceEnv().splits()[args.split])
    ids = ids[: args.limit] if args.limit else ids
    load = os.getloadavg()[0]
    rows = [measure(mode, agent, ids, {}) for mode in args.modes.split(",") for agent in AGENTS]
    print(f"ecommerce, {args.split} split ({len(ids)} tasks), {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.node() or '?'}, {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}. Command: `python bench/ecommerce_agents.py "
          f"{' '.join(sys.argv[1:])}`\n".replace(" `\n", "`\n"))
    print("| agent | mode | tasks | success | " + " | ".join(INTENTS) + " | turns/episode | episodes/s |")
    print("|---|---|---:|---:|" + "---:|" * len(INTENTS) + "---:|---:|")
    for r in rows:
        per = " | ".join(f"{r['intents'].get(i, float('nan')):.0%}" for i in INTENTS)
        print(f"| {r['agent']} | {r['mode']} | {r['tasks']} | {r['success']:.1%} | {per} | {r['turns']:.1f} | "
              f"{r['tasks'] / r['secs']:.0f} |")


if __name__ == "__main__":
    main()

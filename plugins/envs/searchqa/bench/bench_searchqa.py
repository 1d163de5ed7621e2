"""Benchmark the ``searchqa`` env in-process: index build and load, reset, steps/s, memory, scores.

Run: python plugins/envs/searchqa/bench/bench_searchqa.py [--steps 500]
Builds the index in a temporary cache (cold), then loads it again (warm, as every later process
does), and plays the test split with the scripted searcher and two baselines.
"""
from __future__ import annotations

import argparse
import collections
import os
import platform
import random
import re
import tempfile
import time

from agentgym_env_searchqa import env as env_module
from agentgym_env_searchqa.env import SearchQAEnv
from agentgym_env_searchqa.solver import solve


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    rows = []
    base = rss_mb()
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        env = SearchQAEnv(cache_dir=cache)
        rows.append(("first env, cold cache: load corpus, generate questions, build index (s)", f"{time.perf_counter() - t:.2f}"))
        env_module._cache.clear()
        t = time.perf_counter()
        env = SearchQAEnv(cache_dir=cache)
        rows.append(("first env, warm cache (s)", f"{time.perf_counter() - t:.2f}"))
        rows.append(("process RSS after loading (MB)", f"{rss_mb() - base:.0f}"))
        before = rss_mb()
        sessions = [SearchQAEnv(cache_dir=cache) for _ in range(100)]
        rows.append(("memory per extra session (MB)", f"{(rss_mb() - before) / 100:.2f}"))
        del sessions
        ids = list(env.splits()["train"])
        t = time.perf_counter()
        for tid in ids[:1000]:
            env.reset(task_id=tid)
        rows.append(("reset (ms)", f"{1000 * (time.perf_counter() - t) / 1000:.3f}"))
        rng = random.Random(0)
        words = [w for q in (env.question(i)["question"] for i in ids[:300]) for w in q.split()]
        env.reset(task_id=0)
        t = time.perf_counter()
        for _ in range(args.steps):
            env.step(f"<search>{' '.join(rng.sample(words, 5))}</search>")
        rows.append(("steps/s (searches, top-3)", f"{args.steps / (time.perf_counter() - t):.0f}"))
        scores: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        titles = [r["title"] for r in env.data.retriever.records]
        for tid in env.splits()["test"]:
            kind = env.category(tid)
            scores[kind]["n"] += 1
            env.reset(task_id=tid)
            scores[kind]["scripted"] += solve(env, env.question(tid))[1][3]["success"]
            env.reset(task_id=tid)
            scores[kind]["random"] += env.step(f"<answer>{rng.choice(titles)}</answer>")[3]["success"]
            env.reset(task_id=tid)
            top = re.search(r'Title: "(.*?)"', env.step(f"<search>{env.question(tid)['question']}</search>")[0])
            scores[kind]["one_search"] += env.step(f"<answer>{top.group(1) if top else 'none'}</answer>")[3]["success"]
    load = open("/proc/loadavg").read().split()[0]
    print(f"searchqa in-process, {platform.machine()}, {os.cpu_count()} cores, load average {load}, "
          f"{len(titles)} passages, {len(ids)} train / {len(env.splits()['test'])} test questions\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print("\n| test split, exact match | questions | random title | one search, top title | scripted searcher |")
    print("|---|---|---|---|---|")
    for kind, c in sorted(scores.items()):
        n = c["n"]
        print(f"| {kind} | {n} | {c['random'] / n:.3f} | {c['one_search'] / n:.3f} | {c['scripted'] / n:.3f} |")


if __name__ == "__main__":
    main()

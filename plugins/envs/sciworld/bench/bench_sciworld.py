"""Benchmark the ``sciworld`` env in-process: JVM start, reset time, steps/s, memory per session.

Run: python plugins/envs/sciworld/bench/bench_sciworld.py [--steps 600] [--sessions 8]
Prints a Markdown table (paste it into docs/BENCHMARKS.md with the machine and date).
"""
from __future__ import annotations

import argparse
import os
import platform
import time

from agentgym_env_sciworld import jvm
from agentgym_env_sciworld.env import SciWorldEnv
from agentgym_env_sciworld.tasks import split_ids

# Moves an agent makes early in an episode in most tasks (the first few change the world).
ACTIONS = ["look around", "open door to kitchen", "go to kitchen", "look at counter", "inventory",
           "open cupboard", "look around", "pick up thermometer", "open fridge", "look in fridge",
           "go to hallway", "look around", "task", "valid-but-unknown words here"]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--sessions", type=int, default=8)
    args = ap.parse_args()
    rows = []
    t = time.perf_counter()
    env = SciWorldEnv()
    env.reset(task_id=0)
    rows.append(("JVM start + first reset (s)", f"{time.perf_counter() - t:.2f}"))
    ids = split_ids("train")[::97][:40]
    for tid in ids[:5]:  # JIT warm-up
        env.reset(task_id=tid)
    t = time.perf_counter()
    for tid in ids:
        env.reset(task_id=tid)
    rows.append((f"reset, warm (ms, mean of {len(ids)} tasks)", f"{1000 * (time.perf_counter() - t) / len(ids):.0f}"))
    env.reset(task_id=0)
    t = time.perf_counter()
    for _ in range(args.steps):
        env.step("look around")
    rows.append(("steps/s, 'look around' only (no world change)", f"{args.steps / (time.perf_counter() - t):.0f}"))
    for label, instance in (("steps/s, mixed moves (default: no valid-action list)", env),
                            ("steps/s with valid actions every step (ScienceWorld's default)",
                             SciWorldEnv(valid_actions_in_info=True))):
        n = args.steps if instance is env else max(20, args.steps // 20)
        instance.reset(task_id=0)
        done_steps, t = 0, time.perf_counter()
        while done_steps < n:
            for action in ACTIONS:
                _, _, done, _ = instance.step(action)
                done_steps += 1
                if done:
                    instance.reset(task_id=0)
        rows.append((label, f"{done_steps / (time.perf_counter() - t):.0f}"))
        if instance is not env:
            instance.close()
    pid = env._jvm.proc.pid
    runtime = env._jvm.gateway.jvm.java.lang.Runtime.getRuntime()

    def heap_mb() -> float:
        env._jvm.gateway.jvm.java.lang.System.gc()
        return (runtime.totalMemory() - runtime.freeMemory()) / 2**20

    heap_one, one = heap_mb(), rss_kb(pid)
    extra = [SciWorldEnv() for _ in range(args.sessions - 1)]
    for i, e in enumerate(extra):
        e.reset(task_id=ids[i % len(ids)])
        for action in ACTIONS[:6]:
            e.step(action)
    many, heap_many = rss_kb(pid), heap_mb()
    rows.append(("JVM RSS with 1 session (MB)", f"{one / 1024:.0f}"))
    rows.append((f"JVM RSS with {args.sessions} sessions (MB)", f"{many / 1024:.0f}"))
    rows.append(("JVM heap in use per extra session (MB)", f"{(heap_many - heap_one) / max(1, args.sessions - 1):.1f}"))
    rows.append(("JVMs running", str(jvm.running())))
    for e in extra + [env]:
        e.close()
    load = open("/proc/loadavg").read().split()[0]
    print(f"sciworld in-process, {platform.machine()}, {os.cpu_count()} cores, load average {load}, "
          f"-Xmx256m, {args.sessions} sessions per JVM\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()

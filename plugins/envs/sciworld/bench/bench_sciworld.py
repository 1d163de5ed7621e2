"""Benchmark the ``sciworld`` env in-process: steps/s replaying gold paths, reset time, memory per session.

Run: python plugins/envs/sciworld/bench/bench_sciworld.py [--reps 3] [--sessions 8] [--tasks boil,...]
The default tasks are the first task of each of ScienceWorld's 10 topics (variation 0). For
each, the simulator's gold path is replayed until the task is done, with the default fast step
and with ScienceWorld's own ``PythonInterface.step`` (``fast_step: false``); the best of
``--reps`` replays after one warm-up pass. Where the time goes is split into the JVM's CPU
time (simulation, its JIT and GC) and this process's CPU time (py4j, the env). Prints
Markdown tables for docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import threading
import time

from agentgym_env_sciworld import jvm
from agentgym_env_sciworld.env import SciWorldEnv
from agentgym_env_sciworld.tasks import TASKS, split_ids, task_id

TOPIC_FIRSTS = [t.name for t in TASKS if t.code.endswith("-1")]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process *pid* (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def replay(env: SciWorldEnv, tid: int, actions: list[str], check: bool = True) -> tuple[int, float, float, float]:
    """Replay *actions* from a reset until done: (steps, wall s, JVM CPU s, this process's CPU s)."""
    env.reset(task_id=tid)
    jvm_pid = env._jvm.proc.pid
    steps, j0, p0, t0 = 0, cpu_s(jvm_pid), time.process_time(), time.perf_counter()
    info: dict = {}
    for action in actions:
        _, _, done, info = env.step(action)
        steps += 1
        if done:
            break
    wall, jcpu, pcpu = time.perf_counter() - t0, cpu_s(jvm_pid) - j0, time.process_time() - p0
    if check and not info.get("success"):
        print(f"  note: the gold path of task {tid} ended without success (score {info.get('score')})")
    return steps, wall, jcpu, pcpu


def best(env: SciWorldEnv, tid: int, actions: list[str], reps: int) -> tuple[int, float, float, float]:
    return min((replay(env, tid, actions) for _ in range(reps)), key=lambda r: r[1])


def threaded(envs: list[SciWorldEnv], paths: dict[int, list[str]], seconds: float) -> float:
    """Aggregate steps/s of one thread per env, each playing gold-path episodes (reset included) for *seconds*."""
    counts = [0] * len(envs)
    stop = time.perf_counter() + seconds

    def run(i: int) -> None:
        while time.perf_counter() < stop:
            for tid, actions in paths.items():
                envs[i].reset(task_id=tid)
                for action in actions:
                    counts[i] += 1
                    if envs[i].step(action)[2] or time.perf_counter() >= stop:
                        break
    t0 = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(envs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--tasks", default=",".join(TOPIC_FIRSTS))
    ap.add_argument("--threads-seconds", type=float, default=8.0, help="0 skips the concurrent-session rows")
    ap.add_argument("--warm-seconds", type=float, default=40.0, help="warm-up of the fresh JVMs of the 2-JVM row")
    args = ap.parse_args()
    names = args.tasks.split(",")
    rows: list[tuple[str, str]] = []
    load0 = load_average()

    t = time.perf_counter()
    env = SciWorldEnv(step_limit=0)
    env.reset(task_id=0)
    rows.append(("JVM start + first reset (s)", f"{time.perf_counter() - t:.2f}"))
    gold = SciWorldEnv(gold_path=True)
    paths: dict[int, list[str]] = {}
    for name in names:
        gold.reset(task_id=task_id(name, 0))
        paths[task_id(name, 0)] = gold.gold_actions()
    gold.close()
    ref = SciWorldEnv(step_limit=0, fast_step=False)

    t, steps = time.perf_counter(), 0
    for tid, actions in paths.items():  # warm-up (JIT) for both step paths
        steps += replay(env, tid, actions)[0]
        replay(ref, tid, actions)
    first_pass = steps / (time.perf_counter() - t)
    per_task = []
    for name, (tid, actions) in zip(names, paths.items()):
        per_task.append((name, best(env, tid, actions, args.reps), best(ref, tid, actions, args.reps)))
    rows.append(("first replay of all tasks after JVM start (steps/s, fast and reference step alternating)",
                 f"{first_pass:.0f}"))

    ids = split_ids("train")[::97][:40]
    t = time.perf_counter()
    for tid in ids:
        env.reset(task_id=tid)
    rows.append((f"reset, warm (ms, mean of {len(ids)} train ids)", f"{1000 * (time.perf_counter() - t) / len(ids):.0f}"))

    n = 2000
    t = time.perf_counter()
    for _ in range(n):
        env._sim.moves()
    rows.append(("one py4j round trip (us; a fast step makes 4)", f"{1e6 * (time.perf_counter() - t) / n:.0f}"))

    tid0, actions0 = next(iter(paths.items()))
    listing = SciWorldEnv(step_limit=0, valid_actions_in_info=True)
    steps, wall, _, _ = replay(listing, tid0, actions0[:15], check=False)
    rows.append((f"steps/s with the valid-action list every step ({names[0]}, {steps} steps)", f"{steps / wall:.1f}"))
    listing.close()

    if args.threads_seconds > 0:  # episodes back to back (reset + gold path), one thread per session
        small = {k: v for k, v in paths.items() if len(v) < 100}  # without the slowest task
        for label, count, per_jvm in (("1 session", 1, 8), ("2 sessions in 1 JVM", 2, 8),
                                      ("2 sessions in 2 JVMs", 2, 1)):
            group = [SciWorldEnv(step_limit=0, sessions_per_jvm=per_jvm) for _ in range(count)]
            # Warm-up: the 1-JVM groups join the benchmark's warm JVM; fresh JVMs run several times
            # slower until their JIT has compiled the simulator (~1,000 steps each).
            threaded(group, small, 2.0 if per_jvm > 1 else args.warm_seconds)
            rate = threaded(group, small, args.threads_seconds)
            rows.append((f"episodes back to back (resets included), {label}, {count} thread(s): steps/s", f"{rate:.0f}"))
            for e in group:
                e.close()

    jvm_pid = env._jvm.proc.pid
    runtime = env._jvm.gateway.jvm.java.lang.Runtime.getRuntime()

    def heap_mb() -> float:
        env._jvm.gateway.jvm.java.lang.System.gc()
        return (runtime.totalMemory() - runtime.freeMemory()) / 2**20

    env.reset(task_id=tid0)
    ref.close()
    heap_one, one = heap_mb(), rss_kb(jvm_pid)
    extra = [SciWorldEnv() for _ in range(args.sessions - 1)]
    for i, e in enumerate(extra):
        tid = list(paths)[i % len(paths)]
        e.reset(task_id=tid)
        for action in paths[tid][:6]:
            e.step(action)
    many, heap_many = rss_kb(jvm_pid), heap_mb()
    rows.append((f"JVM RSS (MB), 1 session and {args.sessions}", f"{one / 1024:.0f} / {many / 1024:.0f}"))
    rows.append(("JVM heap in use per extra session (MB)", f"{(heap_many - heap_one) / max(1, args.sessions - 1):.1f}"))
    rows.append(("JVMs running", str(jvm.running())))
    for e in extra + [env]:
        e.close()

    load1 = load_average()
    print(f"sciworld in-process, {platform.machine()}, {os.cpu_count()} cores, load average {load0} at start, "
          f"{load1} at end, -Xmx{env._heap}, up to 8 sessions per JVM, best of {args.reps} replays\n")
    print("| task (variation 0) | gold steps | steps/s (fast, default) | JVM CPU ms/step | env+py4j CPU ms/step "
          "| steps/s (PythonInterface.step) | JVM CPU ms/step |")
    print("|---|---|---|---|---|---|---|")
    for name, (s, w, j, p), (s2, w2, j2, _) in per_task:
        print(f"| {name} | {s} | {s / w:.0f} | {1000 * j / s:.2f} | {1000 * p / s:.2f} | {s2 / w2:.0f} | {1000 * j2 / s2:.2f} |")
    fast_rates = [s / w for _, (s, w, _, _), _ in per_task]
    slow_rates = [s / w for _, _, (s, w, _, _) in per_task]
    total = sum(r[0] for _, r, _ in per_task)
    print(f"| **mean of tasks** | | **{statistics.mean(fast_rates):.0f}** | | | {statistics.mean(slow_rates):.0f} | |")
    print(f"| median of tasks | | {statistics.median(fast_rates):.0f} | | | {statistics.median(slow_rates):.0f} | |")
    print(f"| all steps together | {total} | {total / sum(r[1] for _, r, _ in per_task):.0f} | | | "
          f"{total / sum(r[1] for _, _, r in per_task):.0f} | |")
    print("\n| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()

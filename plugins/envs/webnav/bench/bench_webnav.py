"""Benchmark the webnav env: browser start, reset time, steps/s (in process and over HTTP),
memory per session, and success of the scripted solver and of a random agent.

    python plugins/envs/webnav/bench/bench_webnav.py [--seeds 3] [--sessions 4] [--no-http]

Prints a Markdown table (paste it into docs/BENCHMARKS.md, section "Env plugins: webnav").
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time

from agentgym_env_webnav.env import WebNavEnv
from agentgym_env_webnav.solver import ScriptedSolver, parse_observation
from agentgym_env_webnav.tasks import TASKS


def random_action(obs: str, rng: random.Random) -> str:
    """Uniform over the listed elements: type a random word into text fields, else click."""
    _, els = parse_observation(obs)
    if not els:
        return "scroll [down]"
    el = rng.choice(els)
    if el.role in ("textbox", "password"):
        return f"type [{el.id}] [{rng.choice(['a', 'hello', 'submit'])}]"
    return f"click [{el.id}]"


def play(env: WebNavEnv, task_id: int, agent, max_steps: int = 10) -> tuple[bool, int, float, list[float]]:
    t0 = time.perf_counter()
    obs = env.reset(task_id=task_id)
    reset_s = time.perf_counter() - t0
    step_times, info = [], {}
    for _ in range(max_steps):
        action = agent(obs) or "scroll [down]"
        t0 = time.perf_counter()
        obs, _, done, info = env.step(action)
        step_times.append(time.perf_counter() - t0)
        if done:
            break
    return bool(info.get("success")), len(step_times), reset_s, step_times


def http_steps_per_s(n_steps: int = 40) -> float:
    import httpx

    from agentgym_core.env.launcher import EnvLauncher

    with EnvLauncher("webnav", options={"tasks": ["enter-text"]}) as launcher:
        with httpx.Client(base_url=launcher.urls[0], timeout=60) as http:
            sid = http.post("/create").json()["id"]
            http.post("/reset", json={"id": sid, "data_idx": 0})
            t0 = time.perf_counter()
            for i in range(n_steps):
                http.post("/step", json={"id": sid, "action": f"type [1] [word{i}]", "seq": i + 1})
            return n_steps / (time.perf_counter() - t0)


def http_session_per_episode(pool: int, episodes: int = 12) -> tuple[float, float]:
    """What a rollout does: a session per episode (``/create``, ``/reset``, one step, ``/close``), one after another.
    Returns (seconds an episode, CPU seconds of the server's process tree an episode) with ``browser_pool=pool``."""
    import httpx

    from agentgym_core.env.launcher import EnvLauncher

    def tree_cpu(pid: int) -> float:
        from agentgym_env_webnav.browser import process_tree

        total = 0.0
        for p in process_tree(pid):
            try:
                fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14]))
            except (OSError, IndexError, ValueError):
                pass
        return total / os.sysconf("SC_CLK_TCK")

    with EnvLauncher("webnav", options={"tasks": ["click-test"], "browser_pool": pool}) as launcher:
        pid = launcher.procs[0].pid
        with httpx.Client(base_url=launcher.urls[0], timeout=60) as http:
            cpu0, t0 = tree_cpu(pid), time.perf_counter()
            for k in range(episodes):
                sid = http.post("/create").json()["id"]
                http.post("/reset", json={"id": sid, "data_idx": k})
                http.post("/step", json={"id": sid, "action": "click [1]", "seq": 1})
                cpu = tree_cpu(pid)  # before /close: a quit browser's time is no longer counted after it
                http.post("/close", json={"id": sid})
            wall = time.perf_counter() - t0
            return wall / episodes, (cpu - cpu0) / episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="episodes per task and agent")
    parser.add_argument("--sessions", type=int, default=4, help="concurrent browsers for the memory row")
    parser.add_argument("--no-http", action="store_true")
    args = parser.parse_args()

    env = WebNavEnv()
    t0 = time.perf_counter()
    env.reset(task_id=0)
    first_reset = time.perf_counter() - t0
    mem_one = env.memory_kib() / 1024

    rows, resets_same, steps = {}, [], []
    rng = random.Random(0)
    test_ids = env.splits()["test"]
    for agent_name in ("scripted", "random"):
        wins = 0
        for k in range(args.seeds * len(TASKS)):
            if agent_name == "scripted":
                solver = ScriptedSolver()
                agent = solver.act
            else:
                agent = lambda obs: random_action(obs, rng)  # noqa: E731
            ok, _, reset_s, step_times = play(env, test_ids[k], agent)
            wins += ok
            steps.extend(step_times)
            if k >= len(TASKS):  # page of this task already loaded once: a same-task reset
                resets_same.append(reset_s)
        rows[agent_name] = wins / (args.seeds * len(TASKS))
    switch = []
    for k in range(len(TASKS)):  # every reset loads another task's page
        t0 = time.perf_counter()
        env.reset(task_id=k)
        switch.append(time.perf_counter() - t0)
    env.close()

    others = [WebNavEnv() for _ in range(args.sessions)]
    try:
        for i, e in enumerate(others):
            e.reset(task_id=i)
        mem_many = sum(e.memory_kib() for e in others) / 1024 / args.sessions
    finally:
        for e in others:
            e.close()

    http_rate = None if args.no_http else http_steps_per_s()
    per_episode = {} if args.no_http else {pool: http_session_per_episode(pool) for pool in (0, 2)}

    print(f"machine: {platform.node()} ({platform.machine()}, {platform.processor() or 'cpu'}), "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| measure | value |\n|---|---|")
    print(f"| first reset (starts Chromium) | {first_reset:.2f} s |")
    print(f"| reset, same task page (median) | {statistics.median(resets_same) * 1000:.0f} ms |")
    print(f"| reset, other task page (median) | {statistics.median(switch) * 1000:.0f} ms |")
    print(f"| step in process (median) | {statistics.median(steps) * 1000:.0f} ms = {1 / statistics.mean(steps):.1f} steps/s |")
    if http_rate is not None:
        print(f"| step over HTTP (type action, 1 session) | {http_rate:.1f} steps/s |")
    for pool, (wall, cpu) in per_episode.items():
        print(f"| a session per episode over HTTP (create, reset, step, close), browser_pool={pool} | "
              f"{wall:.2f} s an episode, server CPU {cpu:.2f} s |")
    print(f"| memory, 1 session (PSS of driver + browser) | {mem_one:.0f} MiB |")
    print(f"| memory per session, {args.sessions} sessions (PSS) | {mem_many:.0f} MiB |")
    print(f"| scripted solver success ({len(TASKS)} tasks x {args.seeds} test seeds) | {rows['scripted']:.0%} |")
    print(f"| random agent success (same episodes, <= 10 steps) | {rows['random']:.0%} |")


if __name__ == "__main__":
    main()

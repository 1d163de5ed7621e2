"""Env steps/s in-process (LocalEnvPool) vs over HTTP (launched servers), by concurrent sessions.

    python bench/env_server.py                       # babyai if installed, else the test counter env
    python bench/env_server.py --env textcraft --actions inventory --seconds 5 --record

Each session steps a fixed cycle of actions (numbered steps, as rollout sends them) and
resets when its episode ends; the rate counts steps only. ``--record`` appends the table,
with machine, date and command, under "## Env serving" in docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOYS = ROOT / "tests" / "env"
DEFAULT_ACTIONS = {
    "babyai": ["turn left", "move forward", "turn right", "move forward"],
    "agentgym_env_toys:CounterEnv": ["inc", "dec"],
}


def _toys_on_path() -> None:
    sys.path.insert(0, str(TOYS))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(TOYS), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


async def drive(pool, sessions: int, seconds: float, actions: list[str]) -> tuple[int, float]:
    """Step *sessions* sessions concurrently for *seconds*; return (steps, elapsed seconds)."""
    sids = await asyncio.gather(*(pool.create() for _ in range(sessions)))
    await asyncio.gather(*(pool.reset(sid, i) for i, sid in enumerate(sids)))  # also warms up
    stop_at = time.perf_counter() + seconds

    async def worker(i: int, sid: str) -> int:
        steps = seq = 0
        while time.perf_counter() < stop_at:
            seq += 1
            _, _, done, _ = await pool.step(sid, actions[steps % len(actions)], seq=seq)
            steps += 1
            if done:
                await pool.reset(sid, i + steps)
                seq = 0
        return steps

    start = time.perf_counter()
    counts = await asyncio.gather(*(worker(i, sid) for i, sid in enumerate(sids)))
    elapsed = time.perf_counter() - start
    await asyncio.gather(*(pool.close(sid) for sid in sids))
    return sum(counts), elapsed


def run(args: argparse.Namespace) -> list[dict]:
    from agentgym_core.env.client import HTTPEnvPool
    from agentgym_core.env.launcher import EnvLauncher
    from agentgym_core.env.pool import LocalEnvPool
    from agentgym_core.env.serving import resolve_env

    cls, _ = resolve_env(args.env)
    rows: list[dict] = []
    base: dict[int, float] = {}
    for sessions in args.sessions:
        pool = LocalEnvPool(functools.partial(cls), name=args.env)
        steps, secs = asyncio.run(_with_close(pool, drive(pool, sessions, args.seconds, args.actions)))
        base[sessions] = steps / secs
        rows.append({"mode": "in-process", "servers": "-", "sessions": sessions, "steps": steps, "secs": secs})
        print(_line(rows[-1], base), flush=True)
    for servers in args.servers:
        with EnvLauncher(args.env, servers=servers, max_sessions=max(args.sessions) + 8) as launcher:
            for sessions in args.sessions:
                pool = HTTPEnvPool(launcher.urls, timeout=60, unavailable_after=30)
                steps, secs = asyncio.run(_with_close(pool, drive(pool, sessions, args.seconds, args.actions)))
                rows.append({"mode": "http", "servers": servers, "sessions": sessions, "steps": steps, "secs": secs})
                print(_line(rows[-1], base), flush=True)
    return rows


async def _with_close(pool, coro):
    try:
        return await coro
    finally:
        await pool.aclose()


def _line(row: dict, base: dict[int, float]) -> str:
    rate = row["steps"] / row["secs"]
    ratio = rate / base[row["sessions"]] if row["sessions"] in base else float("nan")
    return (f"| {row['mode']:<10} | {row['servers']!s:>7} | {row['sessions']:>8} | {row['steps']:>7} | "
            f"{row['secs']:>6.2f} | {rate:>9.1f} | {ratio:>12.2f} |")


INTRO = """Steps/s of one env in-process (LocalEnvPool, env calls in threads) and over HTTP
(HTTPEnvPool to `agentgym env serve` processes started by EnvLauncher), numbered steps, by
concurrent sessions. `vs in-process` compares with the in-process rate at the same number of
sessions. Produced by `bench/env_server.py --record`."""

HEADER = ("| mode       | servers | sessions |   steps |   secs |   steps/s | vs in-process |\n"
          "|------------|---------|----------|---------|--------|-----------|---------------|")


def record(table: str, args: argparse.Namespace) -> None:
    path = ROOT / "docs" / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    try:
        import uvloop  # noqa: F401
        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    entry = (
        f"\n### {args.env}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC\n\n"
        f"Machine: {platform.node() or '?'}, {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, event loop {loop}, load average {os.getloadavg()[0]:.1f} at the end. "
        f"Command: `python bench/env_server.py "
        f"{' '.join(sys.argv[1:])}`\n\n{table}\n"
    )
    heading = "## Env serving"
    if heading not in text:
        text = text.rstrip() + f"\n\n{heading}\n\n{INTRO}\n" + entry
    else:
        start = text.index(heading) + len(heading)
        nxt = text.find("\n## ", start)
        end = len(text) if nxt == -1 else nxt
        text = text[:end].rstrip() + "\n" + entry + text[end:]
    path.write_text(text)
    print(f"recorded in {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default=None, help="registered env name or module:Class (default: babyai if installed)")
    parser.add_argument("--sessions", default="1,16,64", help="comma-separated concurrent sessions")
    parser.add_argument("--servers", default="1,4", help="comma-separated server process counts")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per configuration")
    parser.add_argument("--actions", default=None, help="comma-separated action cycle")
    parser.add_argument("--record", action="store_true", help="append the table to docs/BENCHMARKS.md")
    args = parser.parse_args()
    _toys_on_path()
    if args.env is None:
        from agentgym_core.plugins import get_plugin_manager

        args.env = "babyai" if "babyai" in get_plugin_manager().registry("envs") else "agentgym_env_toys:CounterEnv"
    args.sessions = [int(s) for s in args.sessions.split(",")]
    args.servers = [int(s) for s in args.servers.split(",")]
    args.actions = args.actions.split(",") if args.actions else DEFAULT_ACTIONS.get(args.env, ["look"])
    print(f"env {args.env}, actions {args.actions}, {args.seconds:g}s per row\n{HEADER}", flush=True)
    rows = run(args)
    base = {r["sessions"]: r["steps"] / r["secs"] for r in rows if r["mode"] == "in-process"}
    table = HEADER + "\n" + "\n".join(_line(r, base) for r in rows)
    if args.record:
        record(table, args)


if __name__ == "__main__":
    main()

"""Load: N concurrent sessions on one env server on loopback for a fixed time; errors, steps/s, RSS drift.

    python bench/load.py --sessions 256 --seconds 60

Launches ``agentgym env serve`` for a tiny echo env (a real subprocess), drives every session
through reset/step episodes with the async HTTP client until the time is up, closes them, and
prints a table: steps/s, errors, sessions left open, server RSS after warm-up and at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "robustness"))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [sys.path[0], os.environ.get("PYTHONPATH")]))


def rss_mib(pid: int) -> float:
    """Resident set size of process *pid* in MiB (Linux /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def drive(url: str, sessions: int, seconds: float, pid: int, warmup: float) -> dict:
    """Run *sessions* concurrent episode loops for *seconds*; returns counts and RSS samples."""
    from agentgym_core.env.client import HTTPEnvPool

    pool = HTTPEnvPool([url], timeout=30, unavailable_after=10)
    counts = {"steps": 0, "episodes": 0, "errors": 0}
    errors: list[str] = []
    start = time.monotonic()
    stop_at = start + seconds
    samples: list[tuple[float, float]] = []

    async def worker(i: int) -> None:
        sid = await pool.create()
        try:
            task = i
            while time.monotonic() < stop_at:
                await pool.reset(sid, task)
                seq, done = 0, False
                while not done:
                    seq += 1
                    _, _, done, _ = await pool.step(sid, f"action {seq} of session {i}", seq)
                    counts["steps"] += 1
                counts["episodes"] += 1
                task = (task + sessions) % 1000  # EchoEnv's train ids: a reset takes ids of a split
        except Exception as exc:  # noqa: BLE001 - counted and reported, the bench goes on
            counts["errors"] += 1
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            await pool.close(sid)

    async def sampler() -> None:
        while time.monotonic() < stop_at:
            samples.append((time.monotonic() - start, rss_mib(pid)))
            await asyncio.sleep(1.0)

    sample_task = asyncio.create_task(sampler())
    await asyncio.gather(*(worker(i) for i in range(sessions)))
    await sample_task
    elapsed = time.monotonic() - start
    health = (await pool.health())[0]
    await pool.aclose()
    after = [r for t, r in samples if t >= warmup] or [samples[-1][1]]
    return {**counts, "seconds": elapsed, "steps_per_s": counts["steps"] / elapsed, "open_after_close": health["sessions"],
            "rss_warm_mib": after[0], "rss_end_mib": rss_mib(pid), "rss_max_mib": max(after), "first_errors": errors[:3]}


def run(sessions: int, seconds: float, warmup: float = 5.0) -> dict:
    from agentgym_core.env.launcher import EnvLauncher

    with EnvLauncher("agentgym_robust_envs:EchoEnv", options={"length": 5}, ttl=0) as launcher:
        return asyncio.run(drive(launcher.urls[0], sessions, seconds, launcher.procs[0].pid, warmup))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    args = ap.parse_args()
    r = run(args.sessions, args.seconds, args.warmup)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}")
    print("| sessions | seconds | steps | steps/s | episodes | errors | open after close | RSS warm (MiB) | RSS end | RSS max |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.sessions} | {r['seconds']:.0f} | {r['steps']} | {r['steps_per_s']:.0f} | {r['episodes']} | {r['errors']} | "
          f"{r['open_after_close']} | {r['rss_warm_mib']:.1f} | {r['rss_end_mib']:.1f} | {r['rss_max_mib']:.1f} |")
    if r["first_errors"]:
        print("first errors:", json.dumps(r["first_errors"], indent=1))


if __name__ == "__main__":
    main()

"""Env serving, per env plugin: reset time, steps/s in-process vs over HTTP (1 and K server
processes) by concurrent sessions, and memory per session.

    python bench/env_server.py                          # every installed env (else the test counter env)
    python bench/env_server.py --env babyai,textcraft --seconds 3 --record

Each session steps its env's default action cycle (``bench/env_profiles.py``; numbered steps,
as rollout sends them) and resets when the episode ends or after ``--max-turns`` steps; resets
are inside the timed window, the rate counts steps. Memory is the PSS (``/proc/<pid>/smaps_rollup``)
of the process tree that holds the envs (this process in-process, the servers over HTTP,
children such as JVMs and browsers included), its peak while N sessions step, minus that tree
before the first session, divided by N. ``--record`` refreshes this env's tables under "## Env serving"
in docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import os
import platform
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOYS = ROOT / "tests" / "env"
TOY = "agentgym_env_toys:CounterEnv"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from env_profiles import PROFILES, Profile, profile


def _toys_on_path() -> None:
    sys.path.insert(0, str(TOYS))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(TOYS), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


# -- memory -------------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def tree_pss_kib(roots: list[int]) -> int:
    """PSS in KiB of *roots* and all their descendants (0 where /proc has no smaps_rollup)."""
    kids, seen, todo, total = _children(), set(), list(roots), 0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(kids.get(pid, ()))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next((int(line.split()[1]) for line in fh if line.startswith("Pss:")), 0)
        except OSError:
            pass
    return total


class PeakSampler:
    """Samples ``measure()`` every *interval* seconds in a thread; ``peak`` is the largest value,
    so short-lived children (codefix's sandbox runs) count when they overlap a sample."""

    def __init__(self, measure, interval: float = 0.25) -> None:
        self.measure, self.interval, self.peak = measure, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.measure())

    def __enter__(self) -> PeakSampler:  # noqa: PYI034 - a benchmark helper, never subclassed
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.measure())


# -- driving sessions ---------------------------------------------------------------------------
async def drive(pool, sessions: int, seconds: float, prof: Profile, task_ids, max_turns: int, measure) -> dict:
    """Step *sessions* sessions concurrently, ``prof.warmup`` seconds untimed then *seconds* timed;
    count steps and resets of the timed part; memory is the peak of *measure* while all are open."""
    sids = await asyncio.gather(*(pool.create() for _ in range(sessions)))
    obs = await asyncio.gather(*(pool.reset(sid, task_ids[i % len(task_ids)]) for i, sid in enumerate(sids)))
    turn, episode = [0] * sessions, list(range(sessions))

    async def worker(i: int, stop_at: float) -> tuple[int, int, float, float]:
        steps = resets = 0
        step_s = reset_s = 0.0
        while (t0 := time.perf_counter()) < stop_at:
            obs[i], _, done, _ = await pool.step(sids[i], prof.action(obs[i], turn[i]), seq=turn[i] + 1)
            t1 = time.perf_counter()
            steps, turn[i], step_s = steps + 1, turn[i] + 1, step_s + t1 - t0
            if done or turn[i] >= max_turns:
                episode[i] += sessions
                obs[i] = await pool.reset(sids[i], task_ids[episode[i] % len(task_ids)])
                resets, turn[i], reset_s = resets + 1, 0, reset_s + time.perf_counter() - t1
        return steps, resets, step_s, reset_s

    if prof.warmup > 0:
        stop_at = time.perf_counter() + prof.warmup
        await asyncio.gather(*(worker(i, stop_at) for i in range(sessions)))
    with PeakSampler(measure) as memory:
        start = time.perf_counter()
        counts = await asyncio.gather(*(worker(i, start + seconds) for i in range(sessions)))
        secs = time.perf_counter() - start
    kib = memory.peak
    await asyncio.gather(*(pool.close(sid) for sid in sids))
    steps, resets, step_s, reset_s = (sum(c[j] for c in counts) for j in range(4))
    return {"steps": steps, "resets": resets, "secs": secs, "kib": kib,
            "step_ms": 1000 * step_s / max(steps, 1), "reset_ms": 1000 * reset_s / resets if resets else float("nan")}


async def _with_close(pool, coro):
    try:
        return await coro
    finally:
        await pool.aclose()


def reset_times(env, task_ids, warm: int = 5) -> tuple[float, float]:
    """(first reset, median of *warm* later resets on other tasks) in ms, on one fresh env."""
    times = []
    for j in range(warm + 1):
        t0 = time.perf_counter()
        env.reset(task_id=task_ids[(j * 37) % len(task_ids)])
        times.append(1000 * (time.perf_counter() - t0))
    return times[0], statistics.median(times[1:])


def bench_env(name: str, args: argparse.Namespace) -> dict:
    """Reset times, then the in-process and HTTP rows of env *name*, printed as they finish."""
    from agentgym_core.env.client import HTTPEnvPool
    from agentgym_core.env.launcher import EnvLauncher
    from agentgym_core.env.pool import LocalEnvPool
    from agentgym_core.env.host import resolve_env

    load_start = os.getloadavg()[0]
    prof = profile(name)
    if args.actions:
        prof = dataclasses.replace(prof, actions=tuple(args.actions), chooser=None)
    sessions = args.sessions or list(prof.sessions)
    servers = args.servers or list(prof.servers)
    cls, _ = resolve_env(name)
    env = cls(**prof.options)
    try:
        task_ids = list(env.splits()["train"])
        first_ms, warm_ms = reset_times(env, task_ids)
    finally:
        env.close()
    result = {"env": name, "profile": prof, "sessions": sessions, "servers": servers, "reset": (first_ms, warm_ms), "rows": []}
    print(f"\n{name}: actions {prof.describe()}; {args.seconds:g}s per row after {prof.warmup:g}s warm-up; reset first {_num(first_ms)} ms, "
          f"warm {_num(warm_ms)} ms\n{HEADER}", flush=True)

    def add(row: dict, base_kib: int) -> None:
        row["mib"] = (row.pop("kib") - base_kib) / row["sessions"] / 1024
        result["rows"].append(row)
        print(_line(row, result["rows"]), flush=True)

    me = [os.getpid()]
    base = tree_pss_kib(me)
    for n in sessions:
        pool = LocalEnvPool(functools.partial(cls, **prof.options), name=name)
        out = asyncio.run(_with_close(pool, drive(pool, n, args.seconds, prof, task_ids, args.max_turns,
                                                  functools.partial(tree_pss_kib, me))))
        add({"mode": "in-process", "servers": "-", "sessions": n, **out}, base)
    for k in servers:
        with EnvLauncher(name, servers=k, options=prof.options, max_sessions=max(sessions) + 8) as launcher:
            pids = [p.pid for p in launcher.procs]
            base = tree_pss_kib(pids)
            for n in sessions:
                pool = HTTPEnvPool(launcher.urls, timeout=120, unavailable_after=60)
                out = asyncio.run(_with_close(pool, drive(pool, n, args.seconds, prof, task_ids, args.max_turns,
                                                          functools.partial(tree_pss_kib, pids))))
                add({"mode": "http", "servers": k, "sessions": n, **out}, base)
    result["load"] = (load_start, os.getloadavg()[0])
    result["at"] = datetime.now(timezone.utc)
    return result


# -- tables -------------------------------------------------------------------------------------
HEADER = ("| mode       | servers | sessions |   steps | resets |   secs |   steps/s | vs in-process | step ms | reset ms "
          "| MiB/session |\n"
          "|------------|---------|----------|---------|--------|--------|-----------|---------------|---------|----------"
          "|-------------|")

SUMMARY_HEADER = ("| env | sessions | reset ms, first / warm | step ms | in-process steps/s | HTTP, 1 server | "
                  "HTTP, K servers | MiB/session | measured (UTC) |\n"
                  "|-----|----------|------------------------|---------|--------------------|----------------|"
                  "-----------------|-------------|----------------|")


def _rate(row: dict) -> float:
    return row["steps"] / row["secs"]


def _line(row: dict, rows: list[dict]) -> str:
    base = [_rate(r) for r in rows if r["mode"] == "in-process" and r["sessions"] == row["sessions"]]
    ratio = _rate(row) / base[0] if base else float("nan")
    return (f"| {row['mode']:<10} | {row['servers']!s:>7} | {row['sessions']:>8} | {row['steps']:>7} | {row['resets']:>6} | "
            f"{row['secs']:>6.2f} | {_rate(row):>9.1f} | {ratio:>13.2f} | {_num(row['step_ms']):>7} | "
            f"{_num(row['reset_ms']) if row['resets'] else '-':>8} | {_num(row['mib']):>11} |")


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}" if abs(x) >= 0.1 else f"{x:.3f}"


def summary_row(res: dict) -> str:
    rows = res["rows"]

    def rates(mode: str, servers) -> str:
        return " / ".join(_num(_rate(r)) for r in rows if r["mode"] == mode and r["servers"] == servers)

    k = max(res["servers"])
    mem_rows = [r for r in rows if r["mode"] == "http" and r["servers"] == min(res["servers"])] or rows
    mem = max(mem_rows, key=lambda r: r["sessions"])
    first, warm = res["reset"]
    one = min((r for r in rows if r["mode"] == "in-process"), key=lambda r: r["sessions"], default=rows[0])
    many = f"K={k}: {rates('http', k)}" if k > 1 else "-"
    return (f"| {res['env']} | {'/'.join(map(str, res['sessions']))} | {_num(first)} / {_num(warm)} | {_num(one['step_ms'])} | "
            f"{rates('in-process', '-')} | {rates('http', min(res['servers']))} | {many} | "
            f"{_num(mem['mib'])} (at {mem['sessions']}) | {res['at']:%Y-%m-%d %H:%M} |")


def detail(res: dict, argv: list[str]) -> str:
    prof = res["profile"]
    table = HEADER + "\n" + "\n".join(_line(r, res["rows"]) for r in res["rows"])
    cap = f" Sessions capped at {max(res['sessions'])}: {prof.cap}." if prof.cap else ""
    return (f"### {res['env']}, {res['at']:%Y-%m-%d %H:%M} UTC\n\n"
            f"Machine: {platform.node() or '?'}, {platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, load average {res['load'][0]:.1f} at the start, {res['load'][1]:.1f} at the end. Actions: {prof.describe()}; "
            f"{prof.warmup:g} s untimed warm-up per row; "
            f"reset first {_num(res['reset'][0])} ms, warm {_num(res['reset'][1])} ms.{cap} "
            f"Command: `python bench/env_server.py {' '.join(argv)}`\n\n{table}\n")


def cap_notes(envs: list[str]) -> str:
    notes = [f"- {e}: sessions capped at {max(profile(e).sessions)}: {profile(e).cap}." for e in envs if profile(e).cap]
    return "\n".join(notes)


# -- recording ----------------------------------------------------------------------------------
SECTION = "## Env serving"
SUMMARY = "### Summary, one row per env"
INTRO = """Per env plugin: reset time, steps/s in-process (LocalEnvPool) and over HTTP (HTTPEnvPool
to `agentgym env serve` processes started by EnvLauncher) by concurrent sessions, and memory
per session. Produced by `bench/env_server.py --record`."""


def record(results: list[dict], argv: list[str], path: Path = ROOT / "docs" / "BENCHMARKS.md") -> None:
    """Refresh the summary rows and the detailed tables of the measured envs; keep the others."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if SECTION not in text:
        text = text.rstrip() + f"\n\n{SECTION}\n\n{INTRO}\n"
    start = text.index(SECTION) + len(SECTION)
    nxt = text.find("\n## ", start)
    end = len(text) if nxt == -1 else nxt
    parts = text[start:end].split("\n### ")
    intro, subs = parts[0].strip("\n"), ["### " + p.strip("\n") for p in parts[1:]]
    old_summary = next((s for s in subs if s.startswith(SUMMARY)), "")
    rows = {line.split("|")[1].strip(): line for line in old_summary.splitlines()
            if line.startswith("| ") and not line.startswith("| env ")}
    measured = {r["env"] for r in results}
    rows.update({r["env"]: summary_row(r) for r in results})
    known = list(PROFILES)
    rows = dict(sorted(rows.items(), key=lambda kv: known.index(kv[0]) if kv[0] in known else len(known)))
    details: dict[str, list[str]] = {}
    for sub in subs:
        env = sub.split("\n", 1)[0][4:].split(",")[0]
        if not sub.startswith(SUMMARY) and env not in measured:
            details.setdefault(env, []).append(sub)
    for res in results:
        details[res["env"]] = [detail(res, argv).rstrip()]
    summary = (f"{SUMMARY}\n\nSessions: the session counts of the rates (in that order). Step ms: one step "
               f"in-process with one session (resets excluded). K servers: the larger server count. MiB/session: "
               f"over HTTP with one server, at the largest session count. Each env's table below names the "
               f"machine, load and command.\n\n{SUMMARY_HEADER}\n"
               + "\n".join(rows.values()) + "\n\n" + cap_notes(list(rows)))
    order = [*rows, *(e for e in details if e not in rows)]
    body = "\n\n".join([intro, summary.rstrip(), *(sub for e in order for sub in details.get(e, []))])
    path.write_text(text[:start] + "\n\n" + body + "\n" + text[end:])
    print(f"recorded in {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default=None, help="comma-separated env names or module:Class (default: every installed env)")
    parser.add_argument("--sessions", default=None, help="comma-separated concurrent sessions (default: per env)")
    parser.add_argument("--servers", default=None, help="comma-separated server process counts (default: per env)")
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per configuration")
    parser.add_argument("--max-turns", type=int, default=20, help="reset a session after this many steps of one episode")
    parser.add_argument("--actions", default=None, help="comma-separated action cycle (replaces the env's default)")
    parser.add_argument("--record", action="store_true", help="refresh the tables in docs/BENCHMARKS.md")
    args = parser.parse_args()
    argv = sys.argv[1:]
    _toys_on_path()
    if args.env is None:
        from agentgym_core.plugins import get_plugin_manager

        envs = get_plugin_manager().registry("envs").names() or [TOY]
    else:
        envs = args.env.split(",")
    args.sessions = [int(s) for s in args.sessions.split(",")] if args.sessions else None
    args.servers = [int(s) for s in args.servers.split(",")] if args.servers else None
    args.actions = args.actions.split(",") if args.actions else None
    results, failed = [], []
    for name in envs:
        try:
            results.append(bench_env(name, args))
        except Exception as exc:  # noqa: BLE001 - one broken env must not stop the sweep
            failed.append(name)
            print(f"\n{name}: FAILED, skipped: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    if results:
        print(f"\n{SUMMARY_HEADER}\n" + "\n".join(summary_row(r) for r in results))
        print(cap_notes([r["env"] for r in results]))
    if args.record and results:
        record(results, argv)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()

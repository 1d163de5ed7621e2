"""Viewer speed on a big step: index build, one page, filtered page, text search, one episode.

    python bench/bench_viewer.py [--episodes 5000] [--turns 20]

Serves a synthetic run on loopback and times the JSON API as the page calls it (median of
5 warm calls; the first call of a step builds its byte-offset index and is timed alone).
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentgym_inspect.viewer.sample import write_sample_run
from agentgym_inspect.viewer.server import BackgroundViewer


def timed(fn, runs: int = 5) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=5000)
    ap.add_argument("--turns", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = write_sample_run(Path(tmp) / "big", steps=1, episodes_per_step=args.episodes, rounds=(args.turns,), step_interval=1)
        write_s = time.perf_counter() - t0
        f = run / "trajectories" / "step_000001.jsonl"
        size_mb = f.stat().st_size / 1e6
        key = "trajectories/step_000001"
        rows = [("write sample run", f"{write_s:.2f} s", f"{args.episodes} episodes, {size_mb:.1f} MB JSONL")]
        with BackgroundViewer(run) as url, httpx.Client(base_url=url, timeout=60) as c:
            get = lambda path, **p: c.get(path, params=p).raise_for_status().json()
            t0 = time.perf_counter()
            get("/api/episodes", file=key, limit=50)
            rows.append(("first page (builds the index)", f"{1000 * (time.perf_counter() - t0):.0f} ms", ""))
            t, page = timed(lambda: c.get("/api/episodes", params={"file": key, "limit": 50, "offset": 2500}))
            rows.append(("page of 50 (warm)", f"{1000 * t:.1f} ms", f"{len(page.content) / 1e3:.1f} kB response"))
            t, _ = timed(lambda: get("/api/episodes", file=key, limit=50, filter="failure", sort="score"))
            rows.append(("filtered + sorted page", f"{1000 * t:.1f} ms", ""))
            t0 = time.perf_counter()
            hits = get("/api/episodes", file=key, limit=50, q="pick up the key")
            rows.append(("text search (cold)", f"{1000 * (time.perf_counter() - t0):.0f} ms", f"{hits['total']} hits"))
            t, _ = timed(lambda: get("/api/episodes", file=key, limit=50, q="pick up the key", offset=50))
            rows.append(("text search, next page (cached)", f"{1000 * t:.1f} ms", ""))
            t, ep = timed(lambda: c.get("/api/episode", params={"file": key, "index": args.episodes - 1}))
            rows.append(("open one episode", f"{1000 * t:.1f} ms", f"{len(ep.json()['turns'])} turns, {len(ep.content) / 1e3:.0f} kB"))
    print(f"Viewer API, {datetime.date.today()}, {platform.machine()} {platform.processor() or ''}, Python {platform.python_version()}")
    w = max(len(r[0]) for r in rows)
    print(f"| {'operation'.ljust(w)} | time | note |\n|{'-' * (w + 2)}|---:|---|")
    for name, t, note in rows:
        print(f"| {name.ljust(w)} | {t} | {note} |")


if __name__ == "__main__":
    main()

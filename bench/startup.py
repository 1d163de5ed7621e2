"""Start-up cost: wall time of `agentgym --help` and `agentgym plugins` (median of N runs).

    python bench/startup.py [--runs 10] [--record]

With --record the table is appended to docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(cmd: list[str], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    exe = shutil.which("agentgym") or str(Path(sys.executable).parent / "agentgym")
    rows = []
    for label, cmd in [
        ("python -c pass (floor)", [sys.executable, "-c", "pass"]),
        ("import agentgym_core", [sys.executable, "-c", "import agentgym_core"]),
        ("agentgym --help", [exe, "--help"]),
        ("agentgym plugins", [exe, "plugins"]),
        ("agentgym list envs", [exe, "list", "envs"]),
    ]:
        med, best = measure(cmd, args.runs)
        rows.append((label, med * 1000, best * 1000))
    table = ["| command | median ms | best ms |", "|---|---:|---:|"]
    table += [f"| `{label}` | {med:.0f} | {best:.0f} |" for label, med, best in rows]
    text = "\n".join(table)
    print(text)
    if args.record:
        stamp = datetime.date.today().isoformat()
        machine = f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}"
        block = (f"\n### Start-up, {stamp}\n\nMachine: {machine}. Command: `python bench/startup.py --runs {args.runs} --record`"
                 f" (median of {args.runs} runs, every installed plugin loaded).\n\n{text}\n")
        with open(REPO / "docs" / "BENCHMARKS.md", "a") as f:
            f.write(block)


if __name__ == "__main__":
    main()

"""Start-up cost: wall time of `agentgym --help` and `agentgym plugins` (median of N runs).

`agentgym --help` is measured with the cached command index (agentgym_core/cli/command_index.py;
one run before the timed ones writes it) and without it (every plugin loaded, as before the index).

    python bench/startup.py [--runs 10] [--record [--out PATH]]

With --record the table replaces the previous one under "## Start-up" in docs/BENCHMARKS.md
(or in PATH); the rest of the file is left as it is.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SECTION = "## Start-up"
BLOCK = "### Start-up, "


def measure(cmd: list[str], runs: int, env: dict[str, str] | None = None) -> tuple[float, float]:
    times = []
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **(env or {})})  # writes the index
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **(env or {})})
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--record", action="store_true", help="put the table under '## Start-up' in docs/BENCHMARKS.md")
    ap.add_argument("--out", default=None, help="with --record: the markdown file to update (default docs/BENCHMARKS.md)")
    args = ap.parse_args()
    exe = shutil.which("agentgym") or str(Path(sys.executable).parent / "agentgym")
    rows = []
    no_index = {"AGENTGYM_NO_CLI_CACHE": "1"}
    for label, cmd, env in [
        ("python -c pass (floor)", [sys.executable, "-c", "pass"], None),
        ("import agentgym_core", [sys.executable, "-c", "import agentgym_core"], None),
        ("agentgym --help", [exe, "--help"], None),
        ("agentgym --help, no command index (AGENTGYM_NO_CLI_CACHE=1: every plugin loaded)", [exe, "--help"], no_index),
        ("agentgym env --help", [exe, "env", "--help"], None),
        ("agentgym plugins", [exe, "plugins"], None),
        ("agentgym list envs", [exe, "list", "envs"], None),
    ]:
        med, best = measure(cmd, args.runs, env)
        rows.append((label, med * 1000, best * 1000))
    table = ["| command | median ms | best ms |", "|---|---:|---:|"]
    table += [f"| `{label}` | {med:.0f} | {best:.0f} |" for label, med, best in rows]
    text = "\n".join(table)
    print(text)
    if args.record:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                   f"load average {os.getloadavg()[0]:.2f}")
        block = (f"{BLOCK}{stamp}\n\nMachine: {machine}. Command: `python bench/startup.py --runs {args.runs} --record`"
                 f" (median of {args.runs} runs, every installed plugin loaded).\n\n{text}\n")
        path = Path(args.out) if args.out else REPO / "docs" / "BENCHMARKS.md"
        path.write_text(record(path.read_text() if path.exists() else "# Benchmarks\n", block))
        print(f"recorded under {SECTION!r} in {path}")


def record(text: str, block: str, section: str = SECTION, replaces: str = BLOCK) -> str:
    """*text* with *block* in place of the previous ``### `` subsections of *section* that start with *replaces*.

    The section's intro and any other subsection stay; so does everything outside the section.
    A file without the section gets it at its end. (Other bench scripts record through this too.)
    """
    heading = re.search(rf"(?m)^{re.escape(section)}[ \t]*$", text)
    if heading is None:
        return text.rstrip("\n") + f"\n\n{section}\n\n{block.strip()}\n"
    start = heading.end()
    nxt = re.search(r"(?m)^## ", text[start:])
    end = len(text) if nxt is None else start + nxt.start()
    intro, *subs = re.split(r"(?m)^(?=### )", text[start:end])
    kept = [sub.strip("\n") for sub in subs if not sub.startswith(replaces)]
    section = "\n\n".join(part for part in (intro.strip("\n"), *kept, block.strip("\n")) if part)
    tail = text[end:]
    return text[:start] + "\n\n" + section + "\n" + ("\n" + tail if tail else "")


def record_result(section: str, title: str, text: str) -> Path:
    """Put ``### <title>, <UTC time>`` and *text* into docs/BENCHMARKS.md under *section* (``## ...``),
    in place of the section's earlier ``### <title>`` block; returns the file."""
    stamp = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
    path = REPO / "docs" / "BENCHMARKS.md"
    path.write_text(record(path.read_text(), f"### {title}, {stamp}\n\n{text.strip()}\n", section, f"### {title}"))
    print(f"recorded under {section!r} in {path}")
    return path


if __name__ == "__main__":
    main()

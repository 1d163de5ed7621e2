"""One config over several seeds and a small grid of overrides, one run after another (or N at a time).

    agentgym train -c configs/x.yaml --seeds 0,1,2 --sweep 'scheduler.rounds=[3],[9],[3,6,9]'

Every combination is its own run, ``runs/<name>-s<seed>[-<key><value>...]``, trained by its
own ``agentgym train`` process (what a user would type; a crash in one run leaves the others
and the next starts with fresh memory). Every combination's config is checked, and every run
directory is checked to be free, before the first run starts. After each run the summary
(held-out success before and after, steps, wall time) is written to
``<output_dir>/<name>-sweep.json`` and its table to ``<name>-sweep.md``; the table is printed at
the end. An evaluation written into a run's ``eval/`` later (``agentgym eval --model RUN``)
updates the summaries listing that run (:func:`refresh`). No torch here.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError


@dataclass
class SweepRun:
    """One run of a sweep: its name, seed and the grid's ``key=value`` items."""

    name: str
    seed: int
    grid: list[str] = field(default_factory=list)

    def overrides(self) -> list[str]:
        return [*self.grid, f"run.seed={self.seed}", f"run.name={self.name}"]


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` or ``"0-2"`` (or both: ``"0-2,7"``) -> distinct seeds in the order given."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise ConfigError(f"--seeds {text!r}: expected seeds such as 0,1,2 or 0-4 (non-negative integers)")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        seeds += [s for s in range(lo, hi + 1) if s not in seeds]
    return seeds


def split_values(text: str) -> list[str]:
    """Split on commas outside brackets and quotes: ``"[3],[3,6,9]"`` -> ``["[3]", "[3,6,9]"]``."""
    values, depth, quote, current = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            values.append(current.strip())
            current = ""
            continue
        current += ch
    values.append(current.strip())
    return values


def parse_sweep(item: str) -> tuple[str, list[str]]:
    """``"trainer.lr=1e-3,3e-4"`` -> ``("trainer.lr", ["1e-3", "3e-4"])``."""
    key, eq, rest = item.partition("=")
    key = key.strip()
    values = split_values(rest) if eq else []
    if not key or not eq or not all(values):
        raise ConfigError(f"--sweep {item!r}: expected key.path=value1,value2 (e.g. --sweep trainer.lr=1e-3,3e-4; "
                          "lists in brackets: --sweep 'scheduler.rounds=[3],[3,6,9]')")
    if key in ("run.seed", "run.name"):
        raise ConfigError(f"--sweep {item!r}: {key} is set per run by the sweep; give seeds with --seeds")
    return key, values


def label(key: str, value: str) -> str:
    """A folder-name part for one grid value: ``scheduler.rounds=[3,6,9]`` -> ``rounds3-6-9``."""
    text = re.sub(r"[^A-Za-z0-9.+_-]+", "-", re.sub(r"[\[\]{}()'\" ]", "", value)) or "x"
    return f"{key.rsplit('.', 1)[-1]}{text}"


def plan(name: str, seeds: Sequence[int], sweeps: Sequence[str]) -> list[SweepRun]:
    """The runs of a sweep: every seed for every combination of the grid's values (grid-major)."""
    grid = [parse_sweep(s) for s in sweeps]
    keys = [k for k, _ in grid]
    for k in keys:
        if keys.count(k) > 1:
            raise ConfigError(f"--sweep {k} is given twice; list all its values in one --sweep {k}=a,b")
    runs = []
    for combo in itertools.product(*[[(k, v) for v in values] for k, values in grid]):
        for seed in seeds:
            parts = [f"s{seed}"] + [label(k, v) for k, v in combo]
            runs.append(SweepRun(name="-".join([name, *parts]), seed=seed, grid=[f"{k}={v}" for k, v in combo]))
    names = [r.name for r in runs]
    for r in runs:
        if names.count(r.name) > 1:
            raise ConfigError(f"two runs of the sweep would be named {r.name!r}; give values that differ in letters "
                              "or digits, not only in punctuation")
    return runs


def prepare(files: Sequence[str], overrides: Sequence[str], seeds: Sequence[int] | None, sweeps: Sequence[str],
            manager: Any) -> tuple[list[SweepRun], Path, str]:
    """``(runs, output folder, base name)``: every run's config validated, every run directory free."""
    from .config import load_config
    from .rundir import RunDir

    base = load_config(list(files), list(overrides), manager=manager)
    runs = plan(base.run.name, seeds if seeds else [int(base.run.seed)], sweeps)
    out = Path(base.run.output_dir)
    for run in runs:
        try:
            cfg = load_config(list(files), [*overrides, *run.overrides()], manager=manager)
        except ConfigError as exc:
            raise ConfigError(f"sweep run {run.name} ({' '.join(run.grid) or 'no grid'}): {exc}") from None
        RunDir(out / run.name).check_new_run(bool(cfg.run.overwrite))
    return runs, out, str(base.run.name)


def results(run_dir: Path) -> dict[str, Any]:
    """What a run directory holds now: its last step and its held-out success before and after."""
    from .rundir import RunDir

    rd = RunDir(run_dir)
    evals = rd.eval_results()
    steps = [int(r["step"]) for r in rd.metrics() if isinstance(r.get("step"), int)]

    def success(tag: str) -> float | None:
        value = ((evals.get(tag) or {}).get("overall") or {}).get("success_rate")
        return float(value) if isinstance(value, (int, float)) else None

    return {"steps": max(steps, default=0), "before": success("before"), "after": success("after")}


def summary_row(run: SweepRun, out: Path, status: str, wall_s: float | None) -> dict[str, Any]:
    """What the table says about one run, read back from its run directory."""
    return {"run": run.name, "seed": run.seed, "grid": dict(item.split("=", 1) for item in run.grid),
            "status": status, **results(out / run.name), "wall_s": None if wall_s is None else round(wall_s, 1),
            "run_dir": str(out / run.name)}


def save_summary(path: Path, data: dict[str, Any]) -> None:
    """Write the summary JSON and its table (``<name>-sweep.md``), each atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, text in ((path, json.dumps(data, indent=2)), (path.with_suffix(".md"), table(data["runs"]) + "\n")):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)


def refresh(run_dir: str | Path) -> list[Path]:
    """Re-read *run_dir*'s steps and evaluations into every sweep summary next to it that lists it
    (an evaluation written after the sweep: the table showed "–"); returns the summaries updated."""
    run_dir = Path(run_dir).resolve()
    updated = []
    for path in sorted(run_dir.parent.glob("*-sweep.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = [r for r in data["runs"] if Path(r["run_dir"]).resolve() == run_dir]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a summary this version wrote: leave it
        if not rows:
            continue
        for row in rows:
            row.update(results(run_dir))
        save_summary(path, data)
        updated.append(path)
    return updated


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The summary as a Markdown table."""
    from .evaluation import markdown_table

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{100 * v:.1f}%"

    keys = list(dict.fromkeys(k for r in rows for k in r["grid"]))
    headers = ["run", "seed", *keys, "status", "steps", "before", "after", "wall time"]
    body = [[r["run"], str(r["seed"]), *[r["grid"].get(k, "–") for k in keys], r["status"], str(r["steps"]),
             pct(r["before"]), pct(r["after"]), "–" if r["wall_s"] is None else f"{r['wall_s'] / 60:.1f} min"]
            for r in rows]
    return markdown_table(headers, body)


def run_sweep(files: Sequence[str], overrides: Sequence[str], seeds: Sequence[int] | None, sweeps: Sequence[str],
              manager: Any, *, jobs: int = 1, extra_args: Sequence[str] = (),
              echo: Callable[[str], Any] = print) -> list[dict[str, Any]]:
    """Train every run of the sweep (``agentgym train`` subprocesses); returns the summary rows.

    Runs go one after another, or *jobs* at a time, each then writing its output to
    ``<output_dir>/<run>.log`` instead of the terminal. *extra_args* go to every run's command
    (``--num-processes 2``). The summary JSON is rewritten after each run, so an interrupted
    sweep still says what finished.
    """
    if jobs < 1:
        raise ConfigError(f"--jobs must be >= 1, got {jobs}")
    runs, out, name = prepare(files, overrides, seeds, sweeps, manager)
    summary_path = out / f"{name}-sweep.json"
    command = [sys.executable, "-m", "agentgym_core.cli.main", "train"]
    command += [a for f in files for a in ("-c", str(f))] + list(extra_args)
    rows = [summary_row(r, out, "not run", None) for r in runs]

    def save() -> None:
        save_summary(summary_path, {"config": list(files), "overrides": list(overrides), "runs": rows})

    echo(f"sweep: {len(runs)} runs into {out}/, {jobs} at a time: {', '.join(r.name for r in runs)}")
    waiting = list(enumerate(runs))
    active: dict[int, tuple[subprocess.Popen, float, Any]] = {}

    def finished(i: int, status: str | None = None) -> None:
        proc, started, log = active.pop(i)
        if log is not None:
            log.close()
        rc = proc.returncode
        rows[i] = summary_row(runs[i], out, status or ("ok" if rc == 0 else f"failed (exit {rc})"),
                              time.monotonic() - started)
        save()
        if jobs > 1:
            echo(f"sweep: {runs[i].name}: {rows[i]['status']} after {rows[i]['wall_s'] / 60:.1f} min")

    try:
        while waiting or active:
            while waiting and len(active) < jobs:
                i, run = waiting.pop(0)
                log = None
                if jobs > 1:
                    out.mkdir(parents=True, exist_ok=True)
                    log = open(out / f"{run.name}.log", "w", encoding="utf-8")  # noqa: SIM115 (closed in finished)
                where = f", output in {out / (run.name + '.log')}" if log else ""
                echo(f"sweep: run {i + 1}/{len(runs)}: {run.name} ({' '.join([*run.grid, f'run.seed={run.seed}'])}){where}")
                proc = subprocess.Popen([*command, *overrides, *run.overrides()], stdout=log,
                                        stderr=subprocess.STDOUT if log else None)
                active[i] = (proc, time.monotonic(), log)
            done = [i for i, (proc, _, _) in active.items() if proc.poll() is not None]
            for i in done:
                finished(i)
            if not done:
                time.sleep(0.2)
    except KeyboardInterrupt:  # the runs got the same Ctrl-C: let them end on their own, then stop
        for i in list(active):
            active[i][0].wait()
            finished(i, "interrupted")
        raise
    finally:
        save()
        echo(table(rows))
        echo(f"sweep summary: {summary_path}")
    return rows

"""Warm start then RL: held-out success of the base model, after the sft stage, after sft + rl, and the expert's.

For each pipeline config (default: configs/textcraft-sft-rl.yaml and configs/babyai-sft-rl.yaml)
it runs ``agentgym train -c CONFIG`` (or ``--resume`` of an unfinished run; a finished one is
read as it is), ``agentgym eval --expert`` on the same held-out tasks and horizon, and prints one
Markdown table row per env with each stage's wall time (from ``pipeline.json``)::

    python bench/warm_start.py [--configs A.yaml,B.yaml] [--table] [override ...]

``--table`` only reads what is there. Overrides (``engine.threads=1``) go to every command.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["configs/textcraft-sft-rl.yaml", "configs/babyai-sft-rl.yaml"]
CLI = [sys.executable, "-m", "agentgym_core.cli.main"]


def run_dir(config: Path) -> Path:
    data = yaml.safe_load(config.read_text())
    run = data.get("run") or {}
    return ROOT / run.get("output_dir", "runs") / run.get("name", "run")


def ensure(config: Path, overrides: list[str]) -> None:
    """Train the pipeline, or resume it when a run of it is there and unfinished."""
    root = run_dir(config)
    state = root / "pipeline.json"
    if state.is_file():
        stages = json.loads(state.read_text())["stages"]
        if all(s.get("status") == "completed" for s in stages):
            return
        cmd = [*CLI, "train", "--resume", str(root), *overrides]
    else:
        cmd = [*CLI, "train", "-c", str(config), *overrides]
    subprocess.run(cmd, check=True, cwd=ROOT)


def expert(config: Path, overrides: list[str], out: Path, name: str) -> dict:
    """The expert's evaluation on the pipeline's held-out tasks and horizon (run once, then read)."""
    target = out / f"{config.stem}-expert-{name}.json"
    if not target.is_file():
        subprocess.run([*CLI, "eval", "-c", str(config), "--expert", name, "--out", str(target), *overrides],
                       check=True, cwd=ROOT)
    return json.loads(target.read_text())


def _pct(summary: dict | None) -> str:
    rate = ((summary or {}).get("overall") or {}).get("success_rate")
    return "–" if rate is None else f"{100 * rate:.1f}%"


def row(config: Path, out: Path, overrides: list[str], expert_name: str) -> str:
    root = run_dir(config)
    stages = {s["name"]: s for s in json.loads((root / "pipeline.json").read_text())["stages"]}

    def summary(stage: str, tag: str) -> dict | None:
        p = root / stage / "eval" / f"{tag}.json"
        return json.loads(p.read_text()) if p.is_file() else None

    base, sft, rl = summary("sft", "before"), summary("sft", "after"), summary("rl", "after")
    meta = (base or sft or rl or {}).get("meta") or {}
    ex = expert(config, overrides, out, expert_name)
    wall = " / ".join(f"{stages[s].get('wall_s', 0) / 60:.0f}" for s in ("sft", "rl") if s in stages)
    return (f"| {meta.get('env', config.stem)} | {meta.get('tasks', '–')} | {meta.get('max_turns', '–')} | "
            f"{_pct(base)} | {_pct(sft)} | {_pct(rl)} | {_pct(ex)} ({ex['meta']['expert']}) | {wall} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--experts", default="planner,heuristic", help="the expert of each config, in order")
    p.add_argument("--out", default="runs/bench-warm-start")
    p.add_argument("--table", action="store_true", help="only print the table of what is there")
    p.add_argument("overrides", nargs="*")
    a = p.parse_args()
    out = ROOT / a.out
    out.mkdir(parents=True, exist_ok=True)
    configs = [ROOT / c for c in a.configs.split(",")]
    experts = a.experts.split(",")
    print("| env | held-out tasks | horizon | base model | after sft | after sft + rl | expert | wall min: sft / rl |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for config, name in zip(configs, experts):
        if not a.table:
            ensure(config, a.overrides)
        if not (run_dir(config) / "pipeline.json").is_file():
            continue
        print(row(config, out, a.overrides, name), flush=True)


if __name__ == "__main__":
    main()

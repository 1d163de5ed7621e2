"""Success of a model with each agent strategy (default, plan, reflect) on several envs, via ``agentgym eval``.

    python bench/strategies.py                                   # the bundled SmolLM2-135M, 16 test tasks
    python bench/strategies.py --envs ecommerce --strategies reflect --model runs/shop-grpo
    python bench/strategies.py --table out/                      # print the table of finished runs

Each (env, strategy) is one ``agentgym eval --local`` process (greedy, ``engine.threads=1``),
run one after another; its summary JSON goes to ``--out`` (an existing one is reused, so an
interrupted sweep resumes). Prints a Markdown table for docs/BENCHMARKS.md: success (by the
last attempt), success by attempt for ``reflect``, mean actions per episode, episodes played
and CPU seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

#: Per env: overrides of configs/quickstart.yaml (babyai: the quickstart's own settings; the
#: others: the quickstart's agent and rollout settings, a longer context, replies and horizon).
ENVS = {
    "babyai": [],
    "ecommerce": ["agent.history_window=0", "agent.instruction_position=system", "model.max_context=2048",
                  "rollout.max_new_tokens=48", "rollout.max_episode_tokens=2048", "--max-turns", "6"],
    "textcraft": ["agent.history_window=0", "model.max_context=2048", "rollout.max_new_tokens=32",
                  "rollout.max_episode_tokens=2048", "--max-turns", "8"],
}
#: Per strategy: its options (reflect: 2 attempts, to keep each run within ~10 CPU-minutes).
STRATEGIES = {
    "default": [],
    "plan": ["agent.strategy.max_tokens=64"],
    "reflect": ["agent.strategy.attempts=2", "agent.strategy.max_tokens=64"],
}


def run_one(env: str, strategy: str, model: str, tasks: int, out: Path, extra: list[str]) -> dict:
    target = out / f"{env}-{strategy}.json"
    if target.is_file():
        return json.loads(target.read_text())
    config = out / f"{env}.yaml"  # the quickstart with this env (its env options are babyai's)
    data = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    if env != "babyai":
        data["env"] = {"name": env}
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    args = ["-c", str(config), *ENVS[env]]
    cmd = [sys.executable, "-m", "agentgym_core.cli.main", "eval", *args, "--model", model, "--local",
           "--strategy", strategy, "--tasks", str(tasks), "--temperature", "0", "--out", str(target),
           "engine.threads=1", *STRATEGIES[strategy], *extra]
    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{env}/{strategy} failed:\n{proc.stderr[-3000:]}")
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = json.loads(target.read_text())
    summary["bench"] = {"wall_s": time.perf_counter() - start,
                        "cpu_s": used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime, "command": cmd[2:]}
    target.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def row(env: str, strategy: str, s: dict) -> str:
    o = s["overall"]
    episodes = sum(1 for _ in open(s["_path"].with_suffix(".jsonl"))) if s.get("_path") else "–"
    by = " / ".join(f"{100 * v:.1f}%" for v in (s.get("attempts") or {}).values()) or "–"
    bench = s.get("bench") or {}
    cpu = f"{bench['cpu_s']:.0f}" if "cpu_s" in bench else "–"
    return (f"| {env} | {strategy} | {o['n']} | {100 * o['success_rate']:.1f}% | {by} | {o['turns_mean']:.2f} | "
            f"{episodes} | {cpu} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default=",".join(ENVS))
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--tasks", type=int, default=16)
    p.add_argument("--out", default="runs/bench-strategies")
    p.add_argument("--table", action="store_true", help="only print the table of the summaries in --out")
    p.add_argument("overrides", nargs="*", help="extra config overrides for every evaluation")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| env | strategy | tasks | success | by attempt 1 / 2 | actions | episodes | CPU s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for env in a.envs.split(","):
        for strategy in a.strategies.split(","):
            path = out / f"{env}-{strategy}.json"
            if a.table and not path.is_file():
                continue
            summary = run_one(env, strategy, a.model, a.tasks, out, a.overrides)
            summary["_path"] = path
            lines.append(row(env, strategy, summary))
            print(lines[-1], file=sys.stderr, flush=True)
    print(f"\n{a.model}, greedy, {a.tasks} test tasks per env; {platform.node()}, {os.cpu_count()} CPUs, "
          f"{datetime.now(timezone.utc):%Y-%m-%d}\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

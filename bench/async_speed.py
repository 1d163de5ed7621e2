"""Synchronous against asynchronous training, side by side: the same config, episodes and updates.

    python bench/async_speed.py -c configs/quickstart.yaml [key=value ...] [--modes sync,pipelined:1,async:2]
        [--eval-tasks 64] [--threads 2] [--json out.json]

Each mode is one ``agentgym train`` in a subprocess (``run.output_dir`` a temporary folder, evaluation before
off, after on ``--eval-tasks`` held-out tasks): ``sync`` is ``trainer.max_staleness=0`` with torch's
threads at ``--threads``; ``pipelined:K`` and ``async:K`` run the rollout worker with ``--threads``
split between the two sides (``trainer.rollout_threads`` for the worker, the rest for the trainer;
on 2 cores a thread each; ``--rollout-threads`` / ``--trainer-threads`` set them). ``env.latency_s=S``
(an override) makes every env answer arrive S seconds later, as a remote env's would. Printed: the wall
time of the training steps (metrics' step times summed) and of the whole command, the speed-up against
the first mode, the trainer's and the worker's idle shares, staleness, weight-sync seconds, and held-out
success after. The last line is one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_mode(mode: str, configs: list[str], overrides: list[str], out: Path, eval_tasks: int, threads: int,
             rollout_threads: int, trainer_threads: int) -> dict:
    """*threads* for ``sync``; *rollout_threads* and *trainer_threads* for the two sides of the others."""
    name, _, k = mode.partition(":")
    if name not in ("sync", "pipelined", "async"):
        raise SystemExit(f"--modes: {mode!r} is not sync, pipelined:K or async:K")
    extra = ["trainer.max_staleness=0"] if name == "sync" else [
        f"trainer.max_staleness={int(k or 1)}", f"trainer.async_mode={name}",
        f"trainer.rollout_threads={rollout_threads}"]
    trainer_threads = threads if name == "sync" else trainer_threads
    env = dict(os.environ, OMP_NUM_THREADS=str(trainer_threads))
    label = mode.replace(":", "-k")
    cmd = [sys.executable, "-m", "agentgym_core.cli.main", "train"]
    for c in configs:
        cmd += ["-c", c]
    cmd += [*overrides, *extra, f"run.output_dir={out}", f"run.name={label}", "run.overwrite=true",
            "eval.before=false", f"eval.after={'true' if eval_tasks else 'false'}", f"eval.tasks={eval_tasks or 1}",
            "trainer.progress=false", f"engine.threads={trainer_threads}"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{mode}: agentgym train failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    run = out / label
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    after = json.loads((run / "eval" / "after.json").read_text())["overall"] if eval_tasks else {}

    def mean(key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return sum(vals) / len(vals) if vals else None

    return {
        "mode": mode, "steps": len(rows), "episodes": sum(r["episodes"] for r in rows),
        "train_s": sum(r["step_time_s"] for r in rows), "wall_s": wall,
        "trainer_idle": mean("trainer_idle_frac"), "rollout_idle": mean("rollout_idle_frac"),
        "staleness_mean": mean("staleness_mean"), "staleness_max": max((r.get("staleness_max") or 0) for r in rows),
        "stale_dropped": sum(r.get("stale_dropped") or 0 for r in rows),
        "sync_s": sum(r.get("weight_sync_time_s") or 0 for r in rows),
        "success_after": after.get("success_rate"), "eval_episodes": after.get("n"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", action="append", required=True)
    ap.add_argument("overrides", nargs="*")
    ap.add_argument("--modes", default="sync,pipelined:1,async:2")
    ap.add_argument("--eval-tasks", type=int, default=64, help="held-out tasks evaluated after training (0: none)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="torch threads in all (default: the cores)")
    ap.add_argument("--rollout-threads", type=int, default=None,
                    help="the asynchronous modes' rollout worker's torch threads (default: half of --threads)")
    ap.add_argument("--trainer-threads", type=int, default=None,
                    help="the asynchronous modes' trainer's torch threads (default: --threads less the worker's); "
                         "where the env's waits leave the worker idle, --threads for both lets the trainer use every core")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rollout_threads = args.rollout_threads or max(1, args.threads // 2)
    trainer_threads = args.trainer_threads or max(1, args.threads - rollout_threads)
    out = Path(tempfile.mkdtemp(prefix="async-speed-"))
    load = os.getloadavg()[0]
    results = []
    for mode in args.modes.split(","):
        results.append(run_mode(mode.strip(), args.config, args.overrides, out, args.eval_tasks, args.threads,
                                rollout_threads, trainer_threads))
        print(f"# {mode}: {results[-1]['train_s']:.0f} s of steps", file=sys.stderr, flush=True)
    base = results[0]["train_s"]
    split = f"asynchronous: rollout {rollout_threads}, trainer {trainer_threads}"
    print(f"# {' '.join(args.config)} {' '.join(args.overrides)}; {args.threads} threads ({split}); load {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}; runs in {out}")
    print("| mode | steps | episodes | steps s | command s | speed-up | trainer idle | rollout idle | staleness mean / max "
          "| dropped | weight sync s | held-out success after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")

    def pct(x: float | None) -> str:
        return "" if x is None else f"{x:.0%}"

    for r in results:
        success = "" if r["success_after"] is None else f"{r['success_after']:.1%} of {r['eval_episodes']}"
        stale = "" if r["staleness_mean"] is None else f"{r['staleness_mean']:.2f} / {r['staleness_max']:.0f}"
        print(f"| {r['mode']} | {r['steps']} | {r['episodes']} | {r['train_s']:.0f} | {r['wall_s']:.0f} | "
              f"{base / r['train_s']:.2f}x | {pct(r['trainer_idle'])} | {pct(r['rollout_idle'])} | {stale} | "
              f"{r['stale_dropped']:.0f} | {r['sync_s']:.1f} | {success} |")
    summary = {"results": results, "speedup": {r["mode"]: base / r["train_s"] for r in results}}
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary["speedup"]))


if __name__ == "__main__":
    main()

"""Does the update score what the sampler sampled? |log pi_trainer - log pi_sampler| on long windowed episodes.

    python bench/sampler_gap.py [--turns 8] [--episodes 4] [--record]

Runs one training step of the bundled SmolLM2-135M-Instruct on BabyAI (the quickstart's env
settings, a fixed horizon of ``--turns``) for each of: the full history and a history window of
2, each with the CPU's bf16 decision forced off (fp32 everywhere) and on (the trainer autocasts to
bf16, the live engine samples from the fp32 weights). The trainer reports ``sampler_logp_diff``
(mean) and ``sampler_logp_diff_max`` over the trained tokens of the step, computed before the
update. For the windowed runs the same episodes are also scored the way the update did before
training segments existed (every reply under the whole episode before it), from the dumped
trajectories and the initial weights.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def train(name: str, out: Path, turns: int, episodes: int, window: int, native_bf16: bool) -> dict:
    overrides = [
        f"run.name={name}", f"run.output_dir={out}", "run.overwrite=true", "model.max_context=4096",
        "rollout.max_episode_tokens=8192", f"scheduler.rounds=[{turns}]",
        "rollout.tasks_per_step=1", f"rollout.group_size={episodes}", "trainer.steps=1", "trainer.save_every=0",
        "trainer.ppo_epochs=2", "eval.before=false", "eval.after=false", f"agent.history_window={window}",
        "engine.threads=1", "model.dtype=auto",  # auto: the CPU's bf16 decision, forced below
    ]
    env = {**os.environ, "AGENTGYM_CPU_BF16": "1" if native_bf16 else "0"}
    cmd = [sys.executable, "-m", "agentgym_core.cli.main", "train", "-c", str(REPO / "configs" / "quickstart.yaml"),
           *overrides]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
    row = json.loads((out / name / "metrics.jsonl").read_text().splitlines()[0])
    trajs = [json.loads(x) for x in (out / name / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    return {"row": row, "trajs": trajs}


def whole_episode_gap(trajs: list[dict], native_bf16: bool) -> tuple[float, float]:
    """The sampler gap of *trajs* when every reply is scored under the whole episode before it."""
    import dataclasses

    import torch
    from agentgym_hf.loading import load_model
    from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions
    from agentgym_trainer_rl.batch import build_batch
    from agentgym_trainer_rl.config import UpdateConfig
    from agentgym_trainer_rl.policy import PolicyModule
    from agentgym_trainer_rl.update import Updater, UpdateSettings

    from agentgym_core.rollout.trajectory import Trajectory

    episodes = [Trajectory.from_dict(t) for t in trajs]
    for t in episodes:
        for turn in t.turns:
            turn.context = None
    lm, _ = load_model("smollm2-135m-instruct", dtype="fp32")
    policy = PolicyModule(lm)
    cfg = UpdateConfig(ppo_epochs=2)
    opts = UpdateSettings(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(UpdateConfig)},
                          bf16=native_bf16)
    updater = Updater(policy, torch.optim.SGD(policy.parameters(), lr=0.0), ALGORITHMS["grpo"], opts,
                      EstimatorOptions())
    batch = build_batch(episodes, pad_id=0)
    updater.score(batch)
    diff = (batch.old_logprobs - batch.sampler_logprobs).abs() * batch.loss_mask
    return float(diff.sum() / batch.loss_mask.sum()), float(diff.max())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--out", default=str(REPO / "runs" / "bench-sampler-gap"))
    ap.add_argument("--record", action="store_true", help="append the table to docs/BENCHMARKS.md")
    args = ap.parse_args()
    out = Path(args.out)
    lines = ["| history | CPU bf16 | turns played (mean) | segments / episode | trainer vs sampler: mean | max "
             "| the same episodes scored under the whole episode: mean | max |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for window in (0, 2):
        for native in (False, True):
            name = f"gap-w{window}-{'bf16' if native else 'fp32'}"
            print(f"{name} ...", flush=True)
            res = train(name, out, args.turns, args.episodes, window, native)
            row, trajs = res["row"], res["trajs"]
            turns = sum(len(t["turns"]) for t in trajs) / len(trajs)
            old = whole_episode_gap(trajs, native) if window else None
            was = f"{old[0]:.2e} | {old[1]:.2e}" if old else "(same) | (same)"
            lines.append(f"| {'window 2' if window else 'full'} | {'on' if native else 'off'} | {turns:.1f} | "
                         f"{row.get('segments_per_episode', 1.0):.2f} | {row['sampler_logp_diff']:.2e} | "
                         f"{row['sampler_logp_diff_max']:.2e} | {was} |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print("\n" + table)
    if args.record:
        sys.path.insert(0, str(Path(__file__).parent))
        from startup import record_result

        import torch

        record_result("## Training", "Trainer vs sampler on windowed episodes", (
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, load average "
            f"{os.getloadavg()[0]:.1f}. Command: `python bench/sampler_gap.py {' '.join(sys.argv[1:])}` "
            f"(SmolLM2-135M-Instruct, BabyAI GoToLocal with the quickstart's settings, {args.turns} turns, "
            f"{args.episodes} episodes of one task, one step; `CPU bf16` is AGENTGYM_CPU_BF16).\n\n{table}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

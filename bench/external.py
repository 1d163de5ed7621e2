"""Concurrent external agents through the policy endpoint against the rollout loop's own episodes.

    python bench/external.py                          # 64 episodes, a tiny random model (fp32)
    python bench/external.py --model smollm2-135m-instruct --episodes 32

Each arm plays the same tasks of a toy env (three replies an episode, every reply the action): ``loop`` with
the rollout loop, ``external`` with ``bench/external_agent.py:loop_agent`` (the loop's conversation on the
``openai`` client, one thread per episode) through the ``external`` strategy. Prints a Markdown table for
docs/BENCHMARKS.md: episodes, model calls, engine batches and their mean size, wall seconds, generated
tokens per second, and whether the two arms' trajectories are token for token the same.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from agentgym_core import BaseEnv  # noqa: E402


class ThreeReplies(BaseEnv):
    instruction = "Say one short sentence. The episode ends after three replies."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.n, self.task = 0, int(task_id or 0)
        return f"Task {self.task}: begin."

    def step(self, action):
        self.n += 1
        return f"Reply {self.n} had {len(action)} characters.", 0.0, self.n >= 3, {}

    def splits(self):
        return {"train": list(range(1024))}


def run_arm(engine, strategy, episodes: int, tokens: int, seed: int) -> tuple[list, dict, float]:
    from agentgym_core.assembly import local_parts
    from agentgym_core.rollout.runner import run_rollout

    parts = local_parts(engine, ThreeReplies, strategy=strategy, concurrency=episodes, max_new_tokens=tokens)
    stats: dict = {}
    start = time.perf_counter()
    trajs = run_rollout(parts, [(i, i) for i in range(episodes)], max_turns=3, seed=seed, stats=stats)
    return trajs, stats, time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="model folder or alias [default: a tiny random model]")
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--tokens", type=int, default=8, help="max new tokens per call")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    import torch
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_external.strategy import ExternalStrategy

    from agentgym_core.testing import load_script

    model = args.model
    if model is None:
        from agentgym_hf.testing import tiny_model_dir

        model = str(tiny_model_dir(Path("/tmp/agentgym-bench-external")))
    engine = HFEngine(model, dtype="fp32")
    agent = load_script(ROOT / "bench" / "external_agent.py", "external_bench_agent").loop_agent
    rows, results = [], {}
    for arm, strategy in (("loop", None), ("external", ExternalStrategy(agent=agent, timeout=3600))):
        trajs, stats, wall = run_arm(engine, strategy, args.episodes, args.tokens, args.seed)
        results[arm] = trajs
        generated = sum(t.num_generated for t in trajs)
        rows.append((arm, len(trajs), sum(len(t.turns) for t in trajs), stats["batches"], stats["mean_batch"],
                     wall, generated / wall, sum(t.failed for t in trajs)))
    same = all(a.token_ids == b.token_ids and a.loss_mask == b.loss_mask for a, b in zip(*results.values()))
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, torch threads "
          f"{torch.get_num_threads()}, model {args.model or 'tiny random (fp32)'}, {args.tokens} tokens per call")
    print("| arm | episodes | calls | batches | mean batch | wall s | generated tok/s | failed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.1f} | {r[5]:.1f} | {r[6]:.1f} | {r[7]} |")
    print(f"trajectories token for token the same in both arms: {same}")
    sys.exit(0)


if __name__ == "__main__":
    main()

"""Expected scores of reference agents: ``python -m agentgym_env_codefix.scores --split test``.

Prints a table of mean reward (fraction of tests passing at submission) and success rate
for: submitting the buggy code unchanged, a random agent, and the scripted solver.
"""
from __future__ import annotations

import argparse
import random
import time

from .env import CodeFixEnv
from .solvers import random_actions, scripted_actions


def play(env: CodeFixEnv, task_id: int, policy: str, rng: random.Random) -> tuple[float, bool]:
    env.reset(task_id=task_id)
    actions = {"unchanged": ["submit"], "random": None, "scripted": None}[policy]
    if policy == "random":
        actions = random_actions(env.task, rng)
    elif policy == "scripted":
        actions = scripted_actions(env.task)
    for action in actions:
        obs, reward, done, info = env.step(action)
    return reward, bool(info.get("success"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=0, help="first N tasks of the split (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    env = CodeFixEnv()
    ids = env.splits()[args.split]
    ids = ids[: args.limit] if args.limit else ids
    print(f"codefix, split {args.split}: {len(ids)} tasks")
    print(f"{'agent':<10} {'mean reward':>12} {'success':>8} {'s/task':>7}")
    for policy in ("unchanged", "random", "scripted"):
        rng = random.Random(args.seed)
        start = time.perf_counter()
        results = [play(env, i, policy, rng) for i in ids]
        took = (time.perf_counter() - start) / len(ids)
        mean = sum(r for r, _ in results) / len(results)
        success = sum(s for _, s in results) / len(results)
        print(f"{policy:<10} {mean:>12.3f} {success:>8.1%} {took:>7.2f}")


if __name__ == "__main__":
    main()

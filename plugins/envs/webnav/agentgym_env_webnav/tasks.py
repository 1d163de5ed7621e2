"""The MiniWoB++ task set and the reproducible mapping ``task_id -> (task, seed, split)``.

Ids interleave tasks: id ``i`` is task ``tasks[i % T]`` with seed ``i // T`` (T tasks), so
any prefix of a split covers every task. Train and test use disjoint seeds.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: Tasks solvable with click / type / select / press on the text rendering, easiest first.
TASKS: tuple[str, ...] = (
    "click-test",
    "click-test-2",
    "click-button",
    "click-button-sequence",
    "click-link",
    "click-dialog",
    "click-dialog-2",
    "click-checkboxes",
    "click-option",
    "click-tab",
    "click-collapsible",
    "click-widget",
    "focus-text",
    "focus-text-2",
    "enter-text",
    "enter-text-dynamic",
    "enter-password",
    "login-user",
    "choose-list",
)


def html_dir() -> Path:
    """Where the ``miniwob`` package keeps the task pages (``<task>.html``)."""
    import miniwob

    return Path(miniwob.__file__).parent / "html" / "miniwob"


def available_tasks() -> list[str]:
    """Every MiniWoB++ task the installed ``miniwob`` package ships."""
    return sorted(p.stem for p in html_dir().glob("*.html"))


class TaskSet:
    """Maps task ids to ``(task, seed)`` for a list of task names and seed budgets."""

    def __init__(self, tasks: Sequence[str], train_seeds: int, test_seeds: int) -> None:
        self.tasks = tuple(tasks)
        self.train_seeds = train_seeds
        self.test_seeds = test_seeds

    @property
    def n_train(self) -> int:
        return len(self.tasks) * self.train_seeds

    def splits(self) -> dict[str, range]:
        n_test = len(self.tasks) * self.test_seeds
        return {"train": range(0, self.n_train), "test": range(self.n_train, self.n_train + n_test)}

    def lookup(self, task_id: int) -> tuple[str, int, str]:
        """``(task name, seed, "train" | "test")`` of *task_id*; ids past the test split keep going
        with fresh test seeds."""
        if task_id < 0:
            raise ValueError(f"task id must be >= 0, got {task_id}")
        n = len(self.tasks)
        task = self.tasks[task_id % n]
        split = "train" if task_id < self.n_train else "test"
        # seeds of the test split start after the train seeds: task_id // n already does that
        return task, task_id // n, split

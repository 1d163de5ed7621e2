"""Task ids: every (task, variation) pair of ScienceWorld, numbered once and for all.

``task_id = offset(task) + variation``, tasks in ScienceWorld's own order (1-1 boil ...
10-2 mendelian-genetics-unknown-plant), 7,207 ids in all. AgentGym's server numbers the
same way but leaves out seven tasks (:data:`AGENTGYM`, 4,639 ids; the same up to id 4,135). The splits are ScienceWorld's own:
each task's variations are cut into train / dev / test blocks by the simulator
(``getVariationsTrain/Dev/Test``); the table below records those blocks so that listing splits
needs no JVM (a test checks it against the JAR).
"""
from __future__ import annotations

import bisect
from typing import NamedTuple


class Task(NamedTuple):
    code: str  # ScienceWorld's id, e.g. "1-1"
    name: str  # the simulator's task name, e.g. "boil"
    topic: str
    variations: int
    train: int  # variations [0, train) are the train split
    dev: int  # then [train, train + dev) dev, and the rest test


TASKS: tuple[Task, ...] = (
    Task("1-1", "boil", "Matter", 30, 14, 7),
    Task("1-2", "melt", "Matter", 30, 14, 7),
    Task("1-3", "freeze", "Matter", 30, 14, 7),
    Task("1-4", "change-the-state-of-matter-of", "Matter", 30, 14, 7),
    Task("2-1", "use-thermometer", "Measurement", 540, 270, 135),
    Task("2-2", "measure-melting-point-known-substance", "Measurement", 436, 218, 109),
    Task("2-3", "measure-melting-point-unknown-substance", "Measurement", 300, 150, 75),
    Task("3-1", "power-component", "Electricity", 20, 10, 5),
    Task("3-2", "power-component-renewable-vs-nonrenewable-energy", "Electricity", 20, 10, 5),
    Task("3-3", "test-conductivity", "Electricity", 900, 450, 225),
    Task("3-4", "test-conductivity-of-unknown-substances", "Electricity", 600, 300, 150),
    Task("4-1", "find-living-thing", "Classification", 300, 150, 75),
    Task("4-2", "find-non-living-thing", "Classification", 300, 150, 75),
    Task("4-3", "find-plant", "Classification", 300, 150, 75),
    Task("4-4", "find-animal", "Classification", 300, 150, 75),
    Task("5-1", "grow-plant", "Biology", 126, 62, 31),
    Task("5-2", "grow-fruit", "Biology", 126, 62, 31),
    Task("6-1", "chemistry-mix", "Chemistry", 32, 16, 8),
    Task("6-2", "chemistry-mix-paint-secondary-color", "Chemistry", 36, 18, 9),
    Task("6-3", "chemistry-mix-paint-tertiary-color", "Chemistry", 36, 18, 9),
    Task("7-1", "lifespan-longest-lived", "Biology", 125, 62, 31),
    Task("7-2", "lifespan-shortest-lived", "Biology", 125, 62, 31),
    Task("7-3", "lifespan-longest-lived-then-shortest-lived", "Biology", 125, 62, 31),
    Task("8-1", "identify-life-stages-1", "Biology", 14, 6, 3),
    Task("8-2", "identify-life-stages-2", "Biology", 10, 4, 2),
    Task("9-1", "inclined-plane-determine-angle", "Forces", 168, 84, 42),
    Task("9-2", "inclined-plane-friction-named-surfaces", "Forces", 1386, 692, 346),
    Task("9-3", "inclined-plane-friction-unnamed-surfaces", "Forces", 162, 80, 40),
    Task("10-1", "mendelian-genetics-known-plant", "Biology", 120, 60, 30),
    Task("10-2", "mendelian-genetics-unknown-plant", "Biology", 480, 240, 120),
)

class Numbering:
    """Global task ids over *tasks*: ``id = offset(task) + variation``, tasks in the given order."""

    def __init__(self, tasks: tuple[Task, ...]) -> None:
        self.tasks = tasks
        self.offsets = tuple(sum(t.variations for t in tasks[:i]) for i in range(len(tasks)))
        self.total = self.offsets[-1] + tasks[-1].variations
        self.by_name = {t.name: i for i, t in enumerate(tasks)}

    def locate(self, task_id: int) -> tuple[Task, int]:
        """``(task, variation)`` of a global task id; IndexError outside ``[0, total)``."""
        if not 0 <= task_id < self.total:
            raise IndexError(f"sciworld task id {task_id} is out of range: ids run from 0 to {self.total - 1}")
        i = bisect.bisect_right(self.offsets, task_id) - 1
        return self.tasks[i], task_id - self.offsets[i]

    def task_id(self, name: str, variation: int) -> int:
        """The global id of *variation* of the task called *name* (inverse of :meth:`locate`)."""
        i = self.by_name[name]
        if not 0 <= variation < self.tasks[i].variations:
            raise IndexError(f"task {name!r} has variations 0..{self.tasks[i].variations - 1}, not {variation}")
        return self.offsets[i] + variation

    def split_ids(self, split: str, names: list[str] | None = None) -> list[int]:
        """Global ids of ScienceWorld's *split* ("train", "dev" or "test"), optionally for some tasks only."""
        out: list[int] = []
        for i, t in enumerate(self.tasks):
            if names is not None and t.name not in names:
                continue
            lo, hi = {"train": (0, t.train), "dev": (t.train, t.train + t.dev),
                      "test": (t.train + t.dev, t.variations)}[split]
            out.extend(range(self.offsets[i] + lo, self.offsets[i] + hi))
        return out


OURS = Numbering(TASKS)
#: AgentGym's numbering (agentenv-sciworld): every task but these seven, in the same order.
AGENTGYM_LEFT_OUT = frozenset({"5-1", "5-2", "9-1", "9-2", "9-3", "10-1", "10-2"})
AGENTGYM = Numbering(tuple(t for t in TASKS if t.code not in AGENTGYM_LEFT_OUT))

OFFSETS, TOTAL, BY_NAME = OURS.offsets, OURS.total, OURS.by_name
locate, task_id, split_ids = OURS.locate, OURS.task_id, OURS.split_ids

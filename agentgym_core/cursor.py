"""A seeded, resumable order over ids (training tasks, training examples), epoch after epoch."""
from __future__ import annotations

import random

from .errors import AgentGymError


class TaskCursor:
    """Ids in a seeded shuffled order, epoch after epoch; its state resumes exactly."""

    def __init__(self, ids: list[int], seed: int, *, what: str = "the env's train split") -> None:
        if not ids:
            raise AgentGymError(f"{what} is empty: nothing to train on")
        self.ids, self.seed, self.epoch, self.index = list(ids), seed, 0, 0
        self._order = self._shuffle()

    def _shuffle(self) -> list[int]:
        order = list(self.ids)
        random.Random(self.seed * 1_000_003 + self.epoch).shuffle(order)
        return order

    def take(self, n: int) -> list[int]:
        out = []
        while len(out) < n:
            if self.index >= len(self._order):
                self.epoch, self.index = self.epoch + 1, 0
                self._order = self._shuffle()
            out.append(self._order[self.index])
            self.index += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        self._order = self._shuffle()

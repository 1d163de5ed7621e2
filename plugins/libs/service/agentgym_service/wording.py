"""Phrase pools for a simulated user: ``{line: (iid phrases, ood phrases)}``; the OOD split draws only
from the second pool, so its wordings are never seen in training."""
from __future__ import annotations

import random
from collections.abc import Mapping


class Words:
    """Draws lines from one pool (``iid`` or ``ood``) with the task's generator."""

    def __init__(self, pools: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]], rng: random.Random,
                 wording: str) -> None:
        self.pools, self.rng, self.pool = pools, rng, 1 if wording == "ood" else 0

    def __call__(self, key: str, **fields: object) -> str:
        return self.rng.choice(self.pools[key][self.pool]).format(**fields)

    def all(self, key: str) -> tuple[str, ...]:
        return self.pools[key][self.pool]

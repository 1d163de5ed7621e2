"""Lights Out: pressing a cell toggles it and its four neighbours; turn every light off."""
import random
from dataclasses import dataclass

from agentgym_core import BaseEnv, ConfigError, config_from


@dataclass
class LightsOutConfig:
    """Options of the ``lightsout`` env (the ``env`` section of a run config, or ``--options``)."""

    #: The board has size x size cells.
    size: int = 3
    #: Random presses that scramble the board at reset; pressing the same cells again solves it.
    presses: int = 2

    def __post_init__(self) -> None:
        _check_at_least("size", self.size, 2, "the board has size x size cells")
        _check_at_least("presses", self.presses, 1, "random presses scramble the board at reset")


def _check_at_least(key: str, value: object, low: int, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"env.{key} must be an integer >= {low} ({meaning}), got {value!r}; "
                          f"set env.{key} to {low} or more")


class LightsOutEnv(BaseEnv):
    instruction = (
        "You play Lights Out on a grid. '#' is a light that is on, '.' is off. Pressing a cell "
        "toggles it and its up/down/left/right neighbours. Turn all lights off.\n"
        "Reply as: Thought: <reasoning> Action: press <row> <col>  (0-based)."
    )
    action_format = "react"
    Config = LightsOutConfig

    def __init__(self, **options) -> None:
        super().__init__()
        # The options are declared once, in LightsOutConfig: an unknown one or a bad value raises
        # ConfigError naming it.
        self.config = config_from(self, options)
        self.size, self.presses = self.config.size, self.config.presses
        self.grid = [[0] * self.size for _ in range(self.size)]
        self.solution: list[tuple[int, int]] = []

    def splits(self):
        return {"train": range(0, 1000), "test": range(1000, 1100)}

    def _toggle(self, r, c):
        for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < self.size and 0 <= cc < self.size:
                self.grid[rr][cc] ^= 1

    def _render(self):
        return "\n".join("".join("#" if v else "." for v in row) for row in self.grid)

    def _random_press(self, rng):
        cell = (rng.randrange(self.size), rng.randrange(self.size))
        self.solution.append(cell)
        self._toggle(*cell)

    def reset(self, *, task_id=None, seed=None):
        rng = random.Random(task_id if task_id is not None else seed)
        self.grid = [[0] * self.size for _ in range(self.size)]
        self.solution = []
        for _ in range(self.presses):
            self._random_press(rng)
        if not any(map(any, self.grid)):
            # The presses cancelled out (a cell pressed twice, or a pattern like 4x4's that
            # toggles every light an even number of times). One press on a dark board always
            # lights that cell, so this ends without a retry loop.
            self._random_press(rng)
        return self._render()

    def _parse(self, action):
        """``(row, col)`` for ``press <row> <col>`` inside the board, else None."""
        parts = action.split()
        if len(parts) != 3 or parts[0] != "press":
            return None
        try:
            r, c = int(parts[1]), int(parts[2])
        except ValueError:
            return None
        return (r, c) if 0 <= r < self.size and 0 <= c < self.size else None

    def step(self, action):
        cell = self._parse(action)
        if cell is None:
            return (f"Invalid action {action!r}. Use: press <row> <col> with 0 <= row, col < {self.size}.",
                    0.0, False, {"invalid_action": True})
        self._toggle(*cell)
        solved = not any(map(any, self.grid))
        return self._render(), 1.0 if solved else 0.0, solved, {"success": solved}

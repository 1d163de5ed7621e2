"""Lights Out: pressing a cell toggles it and its four neighbours; turn every light off."""
import random

from agentgym_core import BaseEnv


class LightsOutEnv(BaseEnv):
    instruction = (
        "You play Lights Out on a grid. '#' is a light that is on, '.' is off. Pressing a cell "
        "toggles it and its up/down/left/right neighbours. Turn all lights off.\n"
        "Reply as: Thought: <reasoning> Action: press <row> <col>  (0-based)."
    )
    action_format = "react"

    def __init__(self, size: int = 3, presses: int = 2, **options):
        super().__init__(**options)
        self.size, self.presses = size, presses
        self.grid = [[0] * size for _ in range(size)]

    def splits(self):
        return {"train": range(0, 1000), "test": range(1000, 1100)}

    def _toggle(self, r, c):
        for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < self.size and 0 <= cc < self.size:
                self.grid[rr][cc] ^= 1

    def _render(self):
        return "\n".join("".join("#" if v else "." for v in row) for row in self.grid)

    def reset(self, *, task_id=None, seed=None):
        rng = random.Random(task_id if task_id is not None else seed)
        self.grid = [[0] * self.size for _ in range(self.size)]
        self.solution = []
        while not any(map(any, self.grid)):
            for _ in range(self.presses):
                cell = (rng.randrange(self.size), rng.randrange(self.size))
                self.solution.append(cell)
                self._toggle(*cell)
        return self._render()

    def step(self, action):
        parts = action.strip().split()
        try:
            assert parts[0] == "press" and len(parts) == 3
            r, c = int(parts[1]), int(parts[2])
            assert 0 <= r < self.size and 0 <= c < self.size
        except (AssertionError, IndexError, ValueError):
            return (f"Invalid action {action!r}. Use: press <row> <col> with 0 <= row, col < {self.size}.",
                    0.0, False, {"invalid_action": True})
        self._toggle(r, c)
        solved = not any(map(any, self.grid))
        return self._render(), 1.0 if solved else 0.0, solved, {"success": solved}

"""Tiny envs for the env-serving tests and benchmark; importable as ``agentgym_env_toys:CounterEnv``."""
from __future__ import annotations

import time

from agentgym_core import BaseEnv


class CounterEnv(BaseEnv):
    """Reach the target by sending "inc"/"dec"; target = task_id % 5 + 1. "boom" raises, "sleep X" / "slowinc X" block."""

    instruction = "Reach the target number. Actions: inc, dec."
    action_format = "free"

    def __init__(self, start: int = 0, **options):
        super().__init__(**options)
        self.start = start
        self.value = start
        self.target = 1
        self.closed = False

    def reset(self, *, task_id=None, seed=None) -> str:
        self.value = self.start
        self.target = (task_id or 0) % 5 + 1
        return f"value {self.value}, target {self.target}"

    def step(self, action: str):
        if action == "boom":
            raise ValueError("the counter exploded")
        if action.startswith("sleep "):
            time.sleep(float(action.split()[1]))
            return f"slept, value {self.value}", 0.0, False, {}
        if action.startswith("slowinc "):  # a slow action whose effect shows if applied twice
            time.sleep(float(action.split()[1]))
            action = "inc"
        if action not in ("inc", "dec"):
            return f"unknown action {action!r}; use inc or dec", 0.0, False, {"invalid_action": True}
        self.value += 1 if action == "inc" else -1
        done = self.value == self.target
        return f"value {self.value}", 1.0 if done else 0.0, done, {"success": done} if done else {}

    def splits(self):
        return {"train": range(0, 100), "test": range(100, 120)}

    def category(self, task_id: int):
        return "even" if task_id % 2 == 0 else "odd"

    def close(self) -> None:
        self.closed = True


class BrokenEnv(CounterEnv):
    """Fails to construct: a launched server for it dies at start-up."""

    def __init__(self, **options):
        raise RuntimeError("BrokenEnv cannot start: missing game files")

"""Envs for the robustness tests; importable in server subprocesses as ``agentgym_robust_envs:EchoEnv``."""
from __future__ import annotations

import time

from agentgym_core import BaseEnv


class EchoEnv(BaseEnv):
    """Echoes any action; an episode ends after ``length`` steps. Never raises on any input."""

    instruction = "Say anything. The episode ends after a few steps."
    action_format = "free"

    def __init__(self, length: int = 3, **options):
        super().__init__(**options)
        self.length = length
        self.n = 0

    def reset(self, *, task_id=None, seed=None) -> str:
        self.n = 0
        return f"task {task_id}"

    def step(self, action: str):
        self.n += 1
        done = self.n >= self.length
        return f"you said {action[:200]!r}", float(done), done, {"success": done} if done else {}

    def splits(self):
        return {"train": range(0, 1000), "test": range(1000, 1100)}


class StallEnv(EchoEnv):
    """Like EchoEnv, but every step blocks for ``stall`` seconds (a hung simulator)."""

    def __init__(self, stall: float = 3600.0, **options):
        super().__init__(**options)
        self.stall = stall

    def step(self, action: str):
        time.sleep(self.stall)
        return super().step(action)

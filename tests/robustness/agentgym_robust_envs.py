"""Envs for the robustness tests; importable in server subprocesses as ``agentgym_robust_envs:EchoEnv``."""
from __future__ import annotations

import os
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


class SlowCreateEnv(EchoEnv):
    """Like EchoEnv, but the first construction after ``stall_file`` appears blocks for ``stall`` seconds.

    The file is a one-shot switch (whoever deletes it stalls), so the server's own start-up
    probe is not slowed; each construction appends a line to ``built_file`` when it is set.
    """

    def __init__(self, stall_file: str = "", stall: float = 3.0, built_file: str = "", **options):
        super().__init__(**options)
        if stall_file:
            try:
                os.unlink(stall_file)
            except FileNotFoundError:
                pass
            else:
                time.sleep(stall)
        if built_file:
            with open(built_file, "a") as fh:
                fh.write("built\n")

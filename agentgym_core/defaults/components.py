"""The ``fixed`` scheduler, ``success`` and ``env`` rewards and ``cpu`` backend."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_core.components import Backend, Reward, Scheduler
from agentgym_core.config_schema import check_range
from agentgym_core.options import config_from


class FixedScheduler(Scheduler):
    """The same horizon at every step."""

    @dataclass
    class Config:
        turns: int = 10

        def __post_init__(self) -> None:
            check_range("scheduler.turns", self.turns, ge=1)

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)
        self.turns = self.config.turns

    def max_turns(self, step: int) -> int:
        return self.turns


class SuccessReward(Reward):
    """1.0 on the last turn of an episode that succeeded, 0 elsewhere.

    Success is ``info["success"]`` of the last step when the env reports it, else "the
    episode ended (done) with a positive env reward".
    """

    @dataclass
    class Config:
        pass

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)

    def __call__(self, trajectory: Any) -> list[float]:
        rewards = [0.0] * len(trajectory.turns)
        if rewards and trajectory.success:
            rewards[-1] = 1.0
        return rewards


class EnvReward(Reward):
    """The env's own reward of each step, as the env gave it (``Turn.env_reward``; 0 for a turn whose
    action was not sent). For envs whose reward says more than success, such as the service envs'
    ``env.reward: graded`` (the share of requests resolved)."""

    @dataclass
    class Config:
        pass

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)

    def __call__(self, trajectory: Any) -> list[float]:
        return [float(turn.env_reward) for turn in trajectory.turns]


class CPUBackend(Backend):
    """The CPU: always available; bf16 autocast where the CPU has native bf16 (AVX512-BF16/AMX)."""

    name = "cpu"
    dist_backend = "gloo"

    @dataclass
    class Config:
        threads: int = 0  # 0: let torch decide

        def __post_init__(self) -> None:
            check_range("backend.threads", self.threads, ge=0, note="0: torch's default")

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)
        self.threads = self.config.threads

    def is_available(self) -> tuple[bool, str]:
        return True, ""

    def device(self, local_rank: int = 0) -> str:
        return "cpu"

    def supports_bf16(self) -> bool:
        from agentgym_core.backend import cpu_supports_bf16

        return cpu_supports_bf16()

    def setup(self) -> None:
        if self.threads:
            import torch

            torch.set_num_threads(self.threads)

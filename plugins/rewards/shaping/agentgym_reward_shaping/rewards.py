"""The shaping rewards. Each returns one float per turn; the trainer sums them with weights.

A *mistake* is a turn whose action could not be parsed (``turn.parse_error`` set) or that
the env rejected (``turn.info["invalid_action"]`` true).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agentgym_core import Reward, config_from


def is_mistake(turn: Any) -> bool:
    """True when the turn's action was unparsable or invalid for the env."""
    return turn.parse_error is not None or bool((turn.info or {}).get("invalid_action"))


def _finite(value: float, key: str, minimum: float | None = None) -> float:
    value = float(value)
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        bound = f" and >= {minimum}" if minimum is not None else ""
        raise ValueError(f"{key} must be a finite number{bound}, got {value}")
    return value


@dataclass
class FormatConfig:
    #: Cost of each mistake (the reward on that turn is ``-penalty``).
    penalty: float = 1.0

    def __post_init__(self) -> None:
        _finite(self.penalty, "rewards[].penalty", 0.0)


class FormatReward(Reward):
    """``-penalty`` on every mistake turn, 0 elsewhere: teaches the action format."""

    Config = FormatConfig

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)
        self.penalty = float(self.config.penalty)

    def __call__(self, trajectory: Any) -> list[float]:
        return [-self.penalty if is_mistake(t) else 0.0 for t in trajectory.turns]


@dataclass
class StepPenaltyConfig:
    #: Cost of every turn.
    cost: float = 0.01

    def __post_init__(self) -> None:
        _finite(self.cost, "rewards[].cost", 0.0)


class StepPenaltyReward(Reward):
    """``-cost`` on every turn, so that of two successful episodes the shorter scores higher."""

    Config = StepPenaltyConfig

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)
        self.cost = float(self.config.cost)

    def __call__(self, trajectory: Any) -> list[float]:
        return [-self.cost] * len(trajectory.turns)


@dataclass
class DecayConfig:
    #: Cost of a mistake on the first turn.
    base: float = 0.1
    #: Factor by which a mistake's cost grows per turn (>= 1).
    growth: float = 1.25
    #: Upper bound of one mistake's cost.
    max_cost: float = 1.0

    def __post_init__(self) -> None:
        _finite(self.base, "rewards[].base", 0.0)
        _finite(self.growth, "rewards[].growth", 1.0)
        _finite(self.max_cost, "rewards[].max_cost", 0.0)


class DecayReward(Reward):
    """Later mistakes cost more: a mistake on turn *k* (0-based) gets ``-min(base * growth**k, max_cost)``.

    Early exploration is cheap; an agent that still writes malformed or impossible actions
    deep into an episode pays up to ``max_cost`` per mistake. Correct turns get 0.
    """

    Config = DecayConfig

    def __init__(self, **options: Any) -> None:
        self.config = cfg = config_from(self, options)
        self.base, self.growth, self.max_cost = float(cfg.base), float(cfg.growth), float(cfg.max_cost)

    def cost(self, k: int) -> float:
        # growth**k overflows to inf for huge k; min() then gives max_cost.
        try:
            return min(self.base * self.growth ** k, self.max_cost)
        except OverflowError:
            return self.max_cost

    def __call__(self, trajectory: Any) -> list[float]:
        return [-self.cost(k) if is_mistake(t) else 0.0 for k, t in enumerate(trajectory.turns)]


@dataclass
class NormalizeConfig:
    #: The env score's range: ``low`` maps to the target's lower end, ``high`` to 1.
    low: float = 0.0
    high: float = 1.0
    #: ``unit`` for [0, 1] or ``signed`` for [-1, 1].
    to: str = "unit"

    def __post_init__(self) -> None:
        _finite(self.low, "rewards[].low")
        _finite(self.high, "rewards[].high")
        if not self.high > self.low:
            raise ValueError(f"rewards[].high must be greater than rewards[].low, got low={self.low}, high={self.high}")
        if self.to not in ("unit", "signed"):
            raise ValueError(f"rewards[].to must be 'unit' ([0, 1]) or 'signed' ([-1, 1]), got {self.to!r}")


class NormalizeReward(Reward):
    """The episode's env score mapped linearly from ``[low, high]`` onto [0, 1] or [-1, 1], clipped.

    ``x = clip((score - low) / (high - low), 0, 1)``; ``unit`` gives ``x``, ``signed``
    gives ``2x - 1``. The value is put on the last turn (other turns get 0). Use it instead
    of ``success`` for envs with graded scores (ScienceWorld's 0-100).
    """

    Config = NormalizeConfig

    def __init__(self, **options: Any) -> None:
        self.config = cfg = config_from(self, options)
        self.low, self.high, self.to = float(cfg.low), float(cfg.high), cfg.to

    def value(self, score: float) -> float:
        x = min(max((float(score) - self.low) / (self.high - self.low), 0.0), 1.0)
        return x if self.to == "unit" else 2.0 * x - 1.0

    def __call__(self, trajectory: Any) -> list[float]:
        rewards = [0.0] * len(trajectory.turns)
        if rewards:
            rewards[-1] = self.value(trajectory.score)
        return rewards

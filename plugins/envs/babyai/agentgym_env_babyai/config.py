"""Options of the ``babyai`` env (the ``env`` section of a run config), checked before any level is built."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_core import ConfigError

from .levels import ALL_LEVELS, resolve_levels


@dataclass
class BabyAIConfig:
    """Options of the ``babyai`` env (the ``env`` section of a run config)."""

    #: Level names and/or groups (easy, medium, hard, all), as a list or a comma-separated
    #: string; task ids interleave them. ``all`` (the default) is every level of the three groups.
    levels: Any = "all"
    #: Training seeds per level (train split = first ``len(levels) * train_seeds`` ids).
    train_seeds: int = 1000
    #: Held-out seeds per level, after the training seeds.
    test_seeds: int = 100
    #: ``binary``: 1 on success; ``minigrid``: minigrid's 1 - 0.9 * moves / max_moves.
    reward: str = "binary"
    #: Use a ~70-token instruction instead of the full ~400-token one (small models, CPUs).
    brief: bool = False
    #: Accept an object action inside a longer reply ("I'll go to the red ball") when the
    #: reply as a whole is not an action; ``info["embedded_action"]`` marks such turns.
    lenient: bool = True
    #: ``none``: this env's tasks, texts and actions. ``agentgym``: AgentGym's babyai server's
    #: (its 40 levels by ``data_idx``, its observation text with ``Available actions``, its
    #: action names and minigrid's discounted reward); see docs/envs.md.
    compat: str = "none"

    def __post_init__(self) -> None:
        from agentgym_core import check_range

        check_range("env.train_seeds", self.train_seeds, ge=1)
        check_range("env.test_seeds", self.test_seeds, ge=1)
        if self.reward not in ("binary", "minigrid"):
            raise ConfigError(f"env.reward must be binary or minigrid, got {self.reward!r}")
        if not isinstance(self.levels, str) and not hasattr(self.levels, "__iter__"):
            raise ConfigError(f"env.levels must be a level or group name, or a list of them ('all': every level), "
                              f"got {self.levels!r}")
        resolve_levels(self.levels)  # unknown names fail when the config loads, not when the env starts
        check_compat(self.compat, self.levels)


def check_compat(compat: Any, levels: Any) -> None:
    if compat not in ("none", "agentgym"):
        raise ConfigError(f"env.compat must be 'none' (this env's own tasks and texts) or 'agentgym' (AgentGym's "
                          f"babyai server's), got {compat!r}")
    if compat == "agentgym" and resolve_levels(levels) != ALL_LEVELS:
        raise ConfigError("env.levels does not apply with env.compat=agentgym: task ids follow AgentGym's fixed list "
                          "of 40 levels (level = task_id % 40); drop env.levels")

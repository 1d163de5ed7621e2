"""Which BabyAI levels exist here, how a task id maps to (level, seed), and building a level.

Task ids interleave the configured levels: ``level = levels[task_id % K]`` and
``seed = task_id // K`` for K levels. With ``train_seeds`` seeds per level for training and
``test_seeds`` held-out seeds after them, ``train = range(0, K * train_seeds)`` and
``test = range(K * train_seeds, K * (train_seeds + test_seeds))``: every level is equally
represented in both splits and no test layout appears in training.
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from typing import Any

from agentgym_core import ConfigError

log = logging.getLogger(__name__)

#: One room, the target usually in view: solvable in 1-3 high-level actions.
EASY = ("GoToRedBallGrey", "GoToRedBall", "GoToObj", "GoToLocal", "PickupLoc")
#: Doors, keys and two-step missions; still one or two rooms.
MEDIUM = ("OpenRedDoor", "GoToDoor", "OpenDoor", "GoToObjDoor", "ActionObjDoor", "UnlockLocal", "PutNextLocal")
#: A 3x3 grid of rooms: the target is usually out of sight, exploration needed.
HARD = ("Open", "GoTo", "Pickup")
GROUPS = {"easy": EASY, "medium": MEDIUM, "hard": HARD, "all": EASY + MEDIUM + HARD}
ALL_LEVELS = GROUPS["all"]


def resolve_levels(levels: str | Iterable[str]) -> tuple[str, ...]:
    """Expand a level option (names, group names, or a comma-separated string) into level names.

    Every level is ``"all"`` (the group); there is no other spelling of it."""
    items = levels.split(",") if isinstance(levels, str) else list(levels)
    out: list[str] = []
    for item in items:
        name = str(item).strip()
        if name.startswith("BabyAI-"):
            name = name[len("BabyAI-"):].removesuffix("-v0")
        if not name:
            continue
        if name.lower() in GROUPS:
            out.extend(GROUPS[name.lower()])
        elif name in ALL_LEVELS or _registered(name):
            out.append(name)
        else:
            import difflib

            close = difflib.get_close_matches(name, ALL_LEVELS, n=3)
            hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise ConfigError(
                f"env.levels: unknown BabyAI level {name!r}.{hint} Use level names such as "
                f"{', '.join(EASY)} or the groups {', '.join(GROUPS)}."
            )
    if not out:
        raise ConfigError("env.levels is empty; name at least one BabyAI level or group (e.g. 'easy')")
    return tuple(dict.fromkeys(out))  # drop duplicates, keep order


def task_level_and_seed(task_id: int, levels: tuple[str, ...]) -> tuple[str, int]:
    """The (level name, minigrid seed) a task id stands for."""
    if not isinstance(task_id, int) or isinstance(task_id, bool) or task_id < 0:
        raise ValueError(f"BabyAI task ids are non-negative integers, got {task_id!r}")
    k = len(levels)
    return levels[task_id % k], task_id // k


def _registered(name: str) -> bool:
    import gymnasium
    import minigrid  # noqa: F401 - registers the BabyAI ids

    return f"BabyAI-{name}-v0" in gymnasium.registry


def _quiet_print(*args: Any, **kwargs: Any) -> None:
    log.debug(" ".join(str(a) for a in args))


def make_level(name: str) -> Any:
    """Instantiate BabyAI level *name* without gymnasium's wrappers (faster resets).

    minigrid prints "Sampling rejected: ..." to stdout while generating some levels; that
    module's ``print`` is pointed at a debug logger instead, which is thread-safe (unlike
    redirecting ``sys.stdout`` while env servers run resets in worker threads).
    """
    import gymnasium
    import minigrid  # noqa: F401 - registers the BabyAI ids
    from minigrid.envs.babyai.core import roomgrid_level

    roomgrid_level.print = _quiet_print  # type: ignore[attr-defined]
    spec = gymnasium.spec(f"BabyAI-{name}-v0")
    module, _, attr = str(spec.entry_point).partition(":")
    cls = getattr(importlib.import_module(module), attr)
    return cls(**(spec.kwargs or {}))

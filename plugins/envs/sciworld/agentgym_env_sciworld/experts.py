"""The ``sciworld.gold`` expert: the simulator's own gold action sequence for the episode's task variation."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentgym_core import ConfigError


def gold(env: Any, observation: str) -> Iterator[str]:
    """Play ScienceWorld's gold path (``getGoldActionSequence``), which the env fetches at reset when it
    was built with ``gold_path: true``."""
    if not getattr(env, "gold_path", False):
        raise ConfigError("the sciworld.gold expert plays the simulator's gold path, which the env loads only with "
                          "the option gold_path: true: add env.gold_path=true to the command or the config")
    for action in env.gold_actions():
        yield action

"""AgentGym core: hookspecs, plugin manager, registries, config, env protocol, agent and rollout.

Import-light by design: nothing here imports torch. The seed project's ``LLMAgent`` is the
``agentgym-rl`` umbrella's (``from agentgym.agents import LLMAgent``), which depends on the
plugins it trains with; core names no plugin.
"""
from __future__ import annotations

__version__ = "0.1.0"

from typing import Any

from .env.base import BaseEnv
from .errors import AgentGymError, ConfigError, PluginLoadError, UnknownNameError

__all__ = [
    "AgentGymError",
    "BaseEnv",
    "ConfigError",
    "PluginLoadError",
    "UnknownNameError",
    "__version__",
    "hookimpl",
]


def __getattr__(name: str) -> Any:
    if name == "hookimpl":  # on first use: `agentgym --help` does not import pluggy
        from .hookspecs import hookimpl

        globals()["hookimpl"] = hookimpl
        return hookimpl
    if name == "LLMAgent":  # where it was before it moved to the umbrella
        from .catalogue import UMBRELLA, install_hint

        raise AttributeError(f"agentgym_core has no LLMAgent: it is in the {UMBRELLA} distribution, "
                             f"`from agentgym.agents import LLMAgent` (to install it: {install_hint(UMBRELLA)})")
    raise AttributeError(f"module 'agentgym_core' has no attribute {name!r}")

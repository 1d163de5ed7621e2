"""AgentGym core: hookspecs, plugin manager, registries, config, env protocol, agent and rollout.

Import-light by design: nothing here imports torch.
"""
from __future__ import annotations

__version__ = "0.1.0"

from typing import Any

from .env.base import BaseEnv
from .errors import AgentGymError, ConfigError, PluginLoadError, UnknownNameError
from .hookspecs import hookimpl

__all__ = [
    "AgentGymError",
    "BaseEnv",
    "LLMAgent",
    "ConfigError",
    "PluginLoadError",
    "UnknownNameError",
    "__version__",
    "hookimpl",
]


def __getattr__(name: str) -> Any:  # LLMAgent loads on first use: `import agentgym_core` stays cheap
    if name == "LLMAgent":
        from .agent_api import LLMAgent

        return LLMAgent
    raise AttributeError(f"module 'agentgym_core' has no attribute {name!r}")

"""Hooks only: registers the ``textcraft`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "textcraft",
        "agentgym_env_textcraft.env:TextCraftEnv",
        description="TextCraft: craft a Minecraft item from given recipes with get/craft/inventory",
    )

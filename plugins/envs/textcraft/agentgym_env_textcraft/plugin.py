"""Hooks only: registers the ``textcraft`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "textcraft",
        "agentgym_env_textcraft.env:TextCraftEnv",
        description="TextCraft: craft a Minecraft item from given recipes with get/craft/inventory",
    )


@hookimpl
def register_experts(registry):
    registry.add("textcraft.planner", "agentgym_env_textcraft.solvers:planner",
                 description="fetches base items and crafts the goal bottom-up from the recipes")

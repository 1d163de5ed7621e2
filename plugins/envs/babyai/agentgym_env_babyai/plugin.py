"""Hooks only: registers the ``babyai`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "babyai",
        "agentgym_env_babyai.env:BabyAIEnv",
        description="BabyAI grid-world levels (minigrid) with text observations and high-level actions",
    )

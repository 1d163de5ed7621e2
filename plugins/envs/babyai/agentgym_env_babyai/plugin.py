"""Hooks only: registers the ``babyai`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "babyai",
        "agentgym_env_babyai.env:BabyAIEnv",
        description="BabyAI grid-world levels (minigrid) with text observations and high-level actions",
    )


@hookimpl
def register_experts(registry):
    registry.add("babyai.oracle", "agentgym_env_babyai.solvers:oracle",
                 description="minigrid's BabyAIBot, primitive moves (turn, move forward, toggle, pick up, drop)")
    registry.add("babyai.heuristic", "agentgym_env_babyai.solvers:heuristic",
                 description="high-level actions on the mission's objects when in view, else looks around (no map)")

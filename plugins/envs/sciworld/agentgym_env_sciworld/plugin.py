"""Hooks only: registers the ``sciworld`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "sciworld",
        "agentgym_env_sciworld.env:SciWorldEnv",
        description="ScienceWorld: 30 elementary-science tasks in a simulated house (needs Java 17)",
    )


@hookimpl
def register_experts(registry):
    registry.add("sciworld.gold", "agentgym_env_sciworld.experts:gold",
                 description="the simulator's gold action sequence (needs env.gold_path: true)")

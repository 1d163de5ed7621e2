"""Hooks only: registers the ``webnav`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "webnav",
        "agentgym_env_webnav.env:WebNavEnv",
        description="Web navigation: MiniWoB++ tasks in headless Chromium (click/type/select on a text rendering)",
    )


@hookimpl
def register_experts(registry):
    registry.add("webnav.scripted", "agentgym_env_webnav.solver:scripted",
                 description="reads the task sentence and element list of each observation")

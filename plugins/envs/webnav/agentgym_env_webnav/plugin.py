"""Hooks only: registers the ``webnav`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "webnav",
        "agentgym_env_webnav.env:WebNavEnv",
        description="Web navigation: MiniWoB++ tasks in headless Chromium (click/type/select on a text rendering)",
    )

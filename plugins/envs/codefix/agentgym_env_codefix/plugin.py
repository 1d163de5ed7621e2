"""Hooks only: registers the ``codefix`` environment."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add("codefix", "agentgym_env_codefix.env:CodeFixEnv",
                 description="fix a bug injected into a HumanEval solution; sandboxed tests, reward = fraction passing")

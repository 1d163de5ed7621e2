"""Hooks only: registers the ``codefix`` environment."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add("codefix", "agentgym_env_codefix.env:CodeFixEnv",
                 description="fix a bug injected into a HumanEval solution; sandboxed tests, reward = fraction passing")


@hookimpl
def register_experts(registry):
    registry.add("codefix.scripted", "agentgym_env_codefix.solvers:scripted",
                 description="knows the injected bug: run, undo it with one edit, run, submit")

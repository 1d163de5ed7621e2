"""Hooks only: registers the ``searchqa`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "searchqa",
        "agentgym_env_searchqa.env:SearchQAEnv",
        description="Deep search: answer questions with <search> over a BM25-indexed Wikipedia corpus (Search-R1 style)",
    )


@hookimpl
def register_experts(registry):
    registry.add("searchqa.searcher", "agentgym_env_searchqa.solver:searcher",
                 description="follows the question's search plan, reads answers from the passages")

"""Hooks only: registers the ``external`` strategy and the ``serve-policy`` command."""
from agentgym_core import hookimpl


@hookimpl
def register_strategies(registry):
    registry.add("external", "agentgym_external.strategy:ExternalStrategy",
                 description="an agent written elsewhere (openai client, any framework) plays through an "
                             "OpenAI-compatible endpoint that records every token")


@hookimpl
def register_commands(registry):
    registry.add("serve-policy", "agentgym_external.serve_cmd:serve_policy",
                 description="Serve a model behind an OpenAI-compatible endpoint that records token-exact traces.")

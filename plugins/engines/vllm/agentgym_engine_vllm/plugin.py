"""Registers the ``vllm`` engine (hooks only: vllm is imported when the engine is built)."""
from agentgym_core import hookimpl


@hookimpl
def register_engines(registry):
    registry.add(
        "vllm",
        "agentgym_engine_vllm.engine:VLLMEngine",
        description="vLLM on GPU: prefix caching, raw logprobs, in-place weight updates (untested here)",
    )

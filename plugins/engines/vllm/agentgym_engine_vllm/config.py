"""Options of the ``vllm`` engine, importable without vllm or torch (checking a config stays fast)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class VLLMEngineConfig:
    """The ``engine`` section when ``engine.name: vllm``."""

    #: Share of GPU memory vLLM may take for weights and KV cache (GPU only; on a CPU the KV
    #: cache size is the environment variable ``VLLM_CPU_KVCACHE_SPACE``, in GiB).
    gpu_memory_utilization: float = 0.5
    tensor_parallel_size: int = 1
    #: Most sequences vLLM runs at once (``max_num_seqs``).
    max_batch_size: int = 256
    #: No CUDA graphs / torch.compile: starts much faster (on a CPU 25 s instead of ~165 s).
    enforce_eager: bool = False
    #: Further keyword arguments for ``vllm.LLM``, passed as they are (e.g. ``{block_size: 16}``).
    llm_args: dict[str, Any] = field(default_factory=dict)
    #: vLLM's own seed (requests carry their own seeds; this seeds whatever does not).
    seed: int = 0

    def __post_init__(self) -> None:
        from agentgym_core import check_range

        check_range("engine.gpu_memory_utilization", self.gpu_memory_utilization, gt=0, le=1)
        check_range("engine.tensor_parallel_size", self.tensor_parallel_size, ge=1, note="GPUs")
        check_range("engine.max_batch_size", self.max_batch_size, ge=1)

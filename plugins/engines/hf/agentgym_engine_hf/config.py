"""Options of the ``hf`` engine, importable without torch (``agentgym config show`` stays fast)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class HFEngineConfig:
    """The ``engine`` section when ``engine.name: hf`` (no torch here: checking a config stays fast)."""

    #: ``cpu``, ``cuda``, ``cuda:1``, ...
    device: str = "cpu"
    #: Most requests decoded together in one batch.
    max_batch_size: int = 32
    #: Episodes whose KV caches are kept (least recently used ones are dropped).
    max_cached_episodes: int = 256
    #: CPU threads torch may use (0: torch's default). 1-2 helps on busy shared machines.
    threads: int = 0
    #: Start a prompt from the cached keys/values of the longest prefix it shares with a
    #: prompt of this call or a recently cached episode (at least ``MIN_SHARED_PREFIX`` tokens).
    share_prefixes: bool = True
    #: ``plain``: prefill and decode each batch as it comes (the default). ``static``: keys and
    #: values in preallocated slots (``max_batch_size`` of them), a fixed-shape decode step with
    #: sampling on the device (CUDA graphs on a GPU), and continuous batching: a finished
    #: request's slot takes the next waiting one. Same greedy tokens; see the plugin README.
    decode: str = "plain"
    #: ``decode: static``: most tokens (prompt + reply) one slot holds; 0: the model's
    #: ``max_position_embeddings``. Slots grow to it by doubling, as requests need.
    slot_tokens: int = 0
    #: ``decode: static``: decode steps between reading new tokens back (stop strings, finished
    #: requests, admissions); 0: 1 on a CPU (reading is free), 16 on a GPU.
    sync_every: int = 0
    #: ``decode: static`` on a GPU: replay the decode step as CUDA graphs (false: run it eagerly).
    cuda_graphs: bool = True

    DECODE_MODES = ("plain", "static")

    def __post_init__(self) -> None:
        from agentgym_core import check_range

        check_range("engine.max_batch_size", self.max_batch_size, ge=1)
        check_range("engine.max_cached_episodes", self.max_cached_episodes, ge=0, note="0: keep none")
        check_range("engine.threads", self.threads, ge=0, note="0: torch's default")
        if self.decode not in self.DECODE_MODES:
            raise ValueError(f"engine.decode must be one of {', '.join(self.DECODE_MODES)}, got {self.decode!r}")
        check_range("engine.slot_tokens", self.slot_tokens, ge=0, note="0: the model's max_position_embeddings")
        check_range("engine.sync_every", self.sync_every, ge=0, note="0: 1 on a CPU, 16 on a GPU")

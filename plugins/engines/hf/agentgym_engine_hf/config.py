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

    def __post_init__(self) -> None:
        from agentgym_core.sections import check_range

        check_range("engine.max_batch_size", self.max_batch_size, ge=1)
        check_range("engine.max_cached_episodes", self.max_cached_episodes, ge=0, note="0: keep none")
        check_range("engine.threads", self.threads, ge=0, note="0: torch's default")

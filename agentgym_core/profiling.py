"""Per-phase wall time and work counts of a run, recorded only while a profile is collected.

The engine, the rollout and the trainers mark their phases (``prefill``, ``decode``, ``update
forward``, ``backward``, ``optimizer``, ...) with :func:`phase`; outside :func:`collecting` that
is one global lookup and nothing else, so the marks stay in the code paths every run takes.
``bench/step_profile.py`` collects them over a training step and turns the counts into FLOP/s
against the machine's measured matmul peak::

    with collecting() as profile:
        trainer.fit()
    profile.phases["prefill"]  # Phase(seconds=..., calls=..., counts={"tokens": ..., ...})

Counts are whatever the phase says it did (``tokens``, ``attended`` query-key pairs, ``head``
positions that ran the LM head, ...), summed over calls. Phases may nest (``update forward``
inside ``update``); each is timed on its own. On a GPU the caller passes ``sync`` (e.g.
``torch.cuda.synchronize``) so a phase ends when its kernels do.
"""
from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

__all__ = ["Phase", "Profile", "collecting", "phase", "profiling"]


@dataclass
class Phase:
    """What one named phase took: wall seconds, calls, and summed work counts."""

    seconds: float = 0.0
    calls: int = 0
    counts: dict[str, float] = field(default_factory=dict)


class Profile:
    """The phases recorded while :func:`collecting` is open (thread-safe: rollout runs the engine in threads)."""

    def __init__(self, sync: Optional[Callable[[], Any]] = None) -> None:
        self.phases: dict[str, Phase] = {}
        self.sync = sync
        self._lock = threading.Lock()

    def add(self, name: str, seconds: float, counts: dict[str, float]) -> None:
        with self._lock:
            entry = self.phases.setdefault(name, Phase())
            entry.seconds += seconds
            entry.calls += 1
            for key, value in counts.items():
                entry.counts[key] = entry.counts.get(key, 0.0) + float(value)

    def reset(self) -> None:
        """Forget what was recorded so far (e.g. after a warm-up step)."""
        with self._lock:
            self.phases.clear()


_ACTIVE: Optional[Profile] = None


def profiling() -> bool:
    """Whether a profile is being collected (callers skip computing counts otherwise)."""
    return _ACTIVE is not None


@contextlib.contextmanager
def collecting(sync: Optional[Callable[[], Any]] = None) -> Iterator[Profile]:
    """Record every :func:`phase` of this process until the block ends."""
    global _ACTIVE
    if _ACTIVE is not None:
        raise RuntimeError("a profile is already being collected in this process")
    _ACTIVE = Profile(sync)
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = None


class _Timer:
    __slots__ = ("profile", "name", "counts", "start")

    def __init__(self, profile: Profile, name: str, counts: dict[str, float]) -> None:
        self.profile, self.name, self.counts = profile, name, counts

    def __enter__(self) -> dict[str, float]:
        if self.profile.sync is not None:
            self.profile.sync()
        self.start = time.perf_counter()
        return self.counts  # the phase may add counts it only knows at the end

    def __exit__(self, *exc: Any) -> None:
        if self.profile.sync is not None:
            self.profile.sync()
        self.profile.add(self.name, time.perf_counter() - self.start, self.counts)


_NULL = contextlib.nullcontext({})


def phase(name: str, **counts: float) -> Any:
    """Time the block as phase *name* with work *counts*, when a profile is collected; else do nothing.

    The context value is the counts dict: ``with phase("decode") as c: ...; c["tokens"] = n``."""
    profile = _ACTIVE
    if profile is None:
        return _NULL
    return _Timer(profile, name, dict(counts))

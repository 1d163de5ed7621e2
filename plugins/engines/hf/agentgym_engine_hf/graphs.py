"""Replaying the static decode step as CUDA graphs, one per ``(batch, length, mode)`` bucket.

A step launches hundreds of small kernels; on a GPU their launch cost, not the arithmetic, sets
the speed of a small model's decode. :class:`StepGraphs` captures the step once per bucket and
replays it. Capturing is checked, never trusted: a new graph's first replay is compared with
the same step run eagerly from the same state (tokens must be equal, logits and log-probs
close); any error or difference raises :class:`GraphFailure`, and the engine falls back to its
plain path. Elsewhere (CPU, or graphs switched off) the step simply runs eagerly.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .static import StepState

#: Batch buckets: a step over rows ``[0, B)`` runs at the next of these (at most the slots).
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512)


class GraphFailure(RuntimeError):
    """Capturing or checking a graph failed; the message says how."""


def batch_bucket(n: int, slots: int) -> int:
    """Rows a step runs over when the highest busy slot is ``n - 1``: the next of
    :data:`BATCH_BUCKETS`, at most *slots*."""
    return min(next((b for b in BATCH_BUCKETS if b >= n), slots), slots)


def length_bucket(n: int, capacity: int, graphs: bool) -> int:
    """Positions a step attends over: powers of two from 128 under graphs (few shapes to
    capture), else multiples of 32 (eager: every extra position costs attention work)."""
    if graphs:
        size = 128
        while size < n:
            size *= 2
    else:
        size = -(-n // 32) * 32
    return min(size, capacity)


class CudaBackend:
    """``torch.cuda.CUDAGraph`` capture; graphs of one engine share one memory pool."""

    def __init__(self) -> None:
        self.pool = None

    def warm(self, fn: Callable[[], None]) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)

    def capture(self, fn: Callable[[], None]) -> Callable[[], None]:
        graph = torch.cuda.CUDAGraph()
        # thread_local: another thread's CUDA calls (a tokenizer, a logger) do not break the capture
        with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
            fn()
        self.pool = graph.pool()
        return graph.replay


class StepGraphs:
    """Runs ``step(key, may_sync)`` eagerly or as a graph captured for *key*; *backend*
    ``None`` means eager (CPU, or graphs off). Graphs are dropped by :meth:`reset` (the KV
    buffers or the weights moved)."""

    def __init__(self, backend: Any, state: StepState) -> None:
        self.backend, self.state = backend, state
        self.graphs: dict[tuple, Callable[[], None]] = {}
        self.captures = 0

    @property
    def active(self) -> bool:
        return self.backend is not None

    def reset(self) -> None:
        self.graphs.clear()

    def run(self, key: tuple, step: Callable[[bool], None], batch: int) -> None:
        if self.backend is None:
            step(True)
            return
        replay = self.graphs.get(key)
        if replay is None:
            try:
                replay = self._capture(step, batch)
                self._check(replay, step, batch)
            except GraphFailure:
                raise
            except Exception as exc:  # noqa: BLE001 - any capture error means: do not use graphs
                raise GraphFailure(f"capturing the decode step {key} failed: {type(exc).__name__}: {exc}") from exc
            self.graphs[key] = replay
            self.captures += 1
            return
        replay()

    def _capture(self, step: Callable[[bool], None], batch: int) -> Callable[[], None]:
        st = self.state
        logits = st.logits[:batch].clone()  # the only state an idle step overwrites
        st.enabled.fill_(False)
        try:
            self.backend.warm(lambda: step(False))
            return self.backend.capture(lambda: step(False))
        finally:
            st.enabled.fill_(True)
            st.logits[:batch] = logits

    def _check(self, replay: Callable[[], None], step: Callable[[bool], None], batch: int) -> None:
        """Run the new graph once, then the step eagerly from the same state; they must agree.
        The eager result stands (the keys/values both wrote are the same tokens' at the same places)."""
        st = self.state
        names = ("pos", "count", "active", "logits", "ring_tokens", "ring_logprobs")
        before = {n: getattr(st, n)[:batch].clone() for n in names}
        replay()
        graph = {n: getattr(st, n)[:batch].clone() for n in names}
        for n in names:
            getattr(st, n)[:batch] = before[n]
        step(False)
        eager = {n: getattr(st, n)[:batch] for n in names}
        for n in ("logits", "ring_logprobs"):
            if not torch.allclose(graph[n], eager[n], atol=1e-2, rtol=1e-2):
                err = float((graph[n] - eager[n]).abs().max())
                raise GraphFailure(f"the captured decode step's {n} differ from the eager step's by {err:.3g}")
        # Kernels picked under capture may round differently in the last bits, which can move a
        # sample sitting on a boundary: a rare row may differ, a broken graph differs everywhere.
        for n in ("pos", "count", "active", "ring_tokens"):
            if int((graph[n] != eager[n]).sum()) > batch // 50:
                raise GraphFailure(f"the captured decode step disagrees with the eager one on {n}")

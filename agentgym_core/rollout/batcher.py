"""Gathers the generation requests of concurrent episodes into batched engine calls.

``engine.generate`` runs in a worker thread, so while one batch generates, episodes waiting
on their env keep stepping and queue the next requests; as soon as the engine is free, all
queued requests go out together.
"""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..engine import GenerationRequest, GenerationResult


class Batcher:
    def __init__(self, engine: Any, max_batch_size: int | None = None) -> None:
        self.engine = engine
        self.max_batch_size = max_batch_size or getattr(engine, "max_batch_size", 64) or 64
        self._pending: list[tuple[GenerationRequest, asyncio.Future]] = []
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._error: BaseException | None = None
        #: Sizes of the batches sent, and seconds the engine spent generating.
        self.batch_sizes: list[int] = []
        self.busy_seconds = 0.0
        self.busy_cpu_seconds = 0.0  # CPU time of the engine thread (robust to machine load)
        # Its own thread: generation never queues behind env calls in the default executor.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentgym-engine")

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        if self._error is not None:
            raise self._error
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        self._wakeup.set()
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            # Let episodes that are about to submit (same loop iteration) join this batch.
            for _ in range(3):
                await asyncio.sleep(0)
            self._wakeup.clear()
            batch, self._pending = self._pending[: self.max_batch_size], self._pending[self.max_batch_size :]
            if self._pending:
                self._wakeup.set()
            if not batch:
                continue
            self.batch_sizes.append(len(batch))
            start = loop.time()
            try:
                results = await loop.run_in_executor(self._executor, self._generate, [r for r, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"engine returned {len(results)} results for {len(batch)} requests")
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting episode
                self._error = exc
                for _, fut in batch + self._pending:
                    if not fut.done():
                        fut.set_exception(exc)
                self._pending = []
                return
            finally:
                self.busy_seconds += loop.time() - start
            for (_, fut), res in zip(batch, results):
                if not fut.done():
                    fut.set_result(res)

    def _generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        start = time.thread_time()
        try:
            return self.engine.generate(requests)
        finally:
            self.busy_cpu_seconds += time.thread_time() - start

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
            self._task = None
        self._executor.shutdown(wait=False)

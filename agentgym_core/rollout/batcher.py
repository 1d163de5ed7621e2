"""Gathers the generation requests of concurrent episodes into batched engine calls.

``engine.generate`` runs in a worker thread, so while one batch generates, episodes waiting
on their env keep stepping and queue the next requests; as soon as the engine is free, all
queued requests go out together.

Lockstep mode (``rollout.lockstep``) waits instead until every episode in flight has queued
its request and sends them sorted by episode: which requests share a batch then no longer
depends on how fast each env step returned, so a seeded rollout samples the same tokens on
every run (a batch's shape changes logits in the last bits, enough to flip a sample now and
then). It costs the overlap of env steps with generation.

An engine that takes requests one at a time while it runs (``engine.supports_submit``, e.g. the
hf engine with ``decode: static``) gets each request as soon as its episode makes it, outside
lockstep: the engine batches continuously itself, so gathering here would only add waiting.
``batch_sizes`` then records how many requests were in flight at each submission.
"""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..engine import GenerationRequest, GenerationResult


class GenerationBatcher:
    def __init__(self, engine: Any, max_batch_size: int | None = None, *,
                 lockstep: Callable[[], int] | None = None) -> None:
        """*lockstep*: returns how many episodes are in flight; a batch goes out once that many
        requests are queued (call :meth:`poke` when the number drops)."""
        self.engine = engine
        self.max_batch_size = max_batch_size or getattr(engine, "max_batch_size", 64) or 64
        self._lockstep = lockstep
        self._pending: list[tuple[int, GenerationRequest, asyncio.Future]] = []
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._error: BaseException | None = None
        #: Sizes of the batches sent, and seconds the engine spent generating.
        self.batch_sizes: list[int] = []
        self.busy_seconds = 0.0
        self.busy_cpu_seconds = 0.0  # CPU time of the engine thread (robust to machine load)
        # Its own thread: generation never queues behind env calls in the default executor.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentgym-engine")
        #: Hand requests to ``engine.submit`` one by one (see the module docstring).
        self.streaming = bool(getattr(engine, "supports_submit", False)) and lockstep is None
        self._in_flight, self._busy_since = 0, 0.0
        self._cpu_start = float(getattr(engine, "busy_cpu_seconds", 0.0)) if self.streaming else 0.0

    async def generate(self, request: GenerationRequest, order: int = 0) -> GenerationResult:
        """Queue *request*; *order* (the episode's index) sorts a lockstep batch."""
        if self._error is not None:
            raise self._error
        if self.streaming:
            return await self._submit(request)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending.append((order, request, future))
        self._wakeup.set()
        return await future

    async def _submit(self, request: GenerationRequest) -> GenerationResult:
        loop = asyncio.get_running_loop()
        if not self._in_flight:
            self._busy_since = loop.time()
        self._in_flight += 1
        self.batch_sizes.append(self._in_flight)
        try:
            return await asyncio.wrap_future(self.engine.submit(request))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - later requests fail at once, as in batch mode
            self._error = exc
            raise
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self.busy_seconds += loop.time() - self._busy_since

    def poke(self) -> None:
        """An episode ended: in lockstep, the requests already queued may now be all there are."""
        self._wakeup.set()

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            if self._lockstep is not None:
                self._wakeup.clear()
                if not self._pending or len(self._pending) < self._lockstep():
                    continue
                ready, self._pending = sorted(self._pending, key=lambda p: p[0]), []
                for i in range(0, len(ready), self.max_batch_size):
                    if not await self._send(ready[i : i + self.max_batch_size], ready[i + self.max_batch_size :]):
                        return
                continue
            # Let episodes that are about to submit (same loop iteration) join this batch.
            for _ in range(3):
                await asyncio.sleep(0)
            self._wakeup.clear()
            batch, self._pending = self._pending[: self.max_batch_size], self._pending[self.max_batch_size :]
            if self._pending:
                self._wakeup.set()
            if batch and not await self._send(batch):
                return

    async def _send(self, batch: list, waiting: list = ()) -> bool:
        """Generate *batch* and resolve its futures; on an engine error fail every waiting episode."""
        loop = asyncio.get_running_loop()
        self.batch_sizes.append(len(batch))
        start = loop.time()
        try:
            results = await loop.run_in_executor(self._executor, self._generate, [r for _, r, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"engine returned {len(results)} results for {len(batch)} requests")
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting episode
            self._error = exc
            for _, _, fut in [*batch, *waiting, *self._pending]:
                if not fut.done():
                    fut.set_exception(exc)
            self._pending = []
            return False
        finally:
            self.busy_seconds += loop.time() - start
        for (_, _, fut), res in zip(batch, results):
            if not fut.done():
                fut.set_result(res)
        return True

    def _generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        start = time.thread_time()
        # an engine that generates in a thread of its own counts that thread's CPU time
        engine_start = float(getattr(self.engine, "busy_cpu_seconds", 0.0))
        try:
            return self.engine.generate(requests)
        finally:
            self.busy_cpu_seconds += time.thread_time() - start
            self.busy_cpu_seconds += float(getattr(self.engine, "busy_cpu_seconds", 0.0)) - engine_start

    async def aclose(self) -> None:
        if self.streaming:  # the engine's own thread did the work: its CPU time since we started
            self.busy_cpu_seconds = float(getattr(self.engine, "busy_cpu_seconds", 0.0)) - self._cpu_start
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
            self._task = None
        self._executor.shutdown(wait=False)

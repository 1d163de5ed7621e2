"""Numbered steps and resets that concurrent episodes send to one env server in the same
event-loop pass go out together as one ``POST /batch`` (see :class:`EnvCallBatcher`)."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import EnvUnavailable

#: Most ops in one ``POST /batch``; a longer queue goes out in several.
MAX_BATCH = 256


class EnvCallBatcher:
    """Per-server queues of ops (both safe to resend); each queue is flushed on the next loop pass.

    *send* ``(server, ops)`` returns one answer or exception per op, in order; an exception it
    raises fails every op of that chunk. *url* ``(server)`` names the server in errors.
    """

    def __init__(self, send: Callable[[int, list[dict[str, Any]]], Awaitable[list[Any]]],
                 url: Callable[[int], str]) -> None:
        self._send = send
        self._url = url
        self._queues: dict[int, list[tuple[dict[str, Any], asyncio.Future]]] = {}
        self._flushing: set[asyncio.Task] = set()

    async def submit(self, server: int, op: dict[str, Any]) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        queue = self._queues.setdefault(server, [])
        queue.append((op, future))
        if len(queue) == 1:
            loop.call_soon(self._start_flush, server)
        return await future

    def _start_flush(self, server: int) -> None:
        task = asyncio.get_running_loop().create_task(self._flush(server))
        self._flushing.add(task)  # keep a reference until it is done
        task.add_done_callback(self._flushing.discard)

    async def _flush(self, server: int) -> None:
        items = self._queues.pop(server, [])
        try:
            for start in range(0, len(items), MAX_BATCH):
                chunk = items[start:start + MAX_BATCH]
                try:
                    outcomes = await self._send(server, [op for op, _ in chunk])
                except Exception as exc:  # the whole request failed: every op in it fails the same way
                    outcomes = [exc] * len(chunk)
                for (_, future), outcome in zip(chunk, outcomes, strict=True):
                    if future.done():
                        continue
                    if isinstance(outcome, BaseException):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:  # never leave a caller waiting, even if this task is cancelled
            for _, future in items:
                if not future.done():
                    future.set_exception(EnvUnavailable(f"env request to {self._url(server)} was abandoned "
                                                        "(client shutting down)"))

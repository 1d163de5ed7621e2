"""An env pool whose answers arrive later, as a remote env's do (``env.latency_s``, ``env.latency_sigma``).

A browser loading a real page, a sandbox running a test suite or a user played by a hosted model
answers in seconds, and the time is spent elsewhere: this machine's cores are free meanwhile. On a
laptop the shipped envs answer in milliseconds of local CPU, so how a run copes with slow envs
(asynchronous training, episode streaming, the watchdog) cannot be seen there. :class:`LatencyPool`
wraps any :class:`~.pool.EnvPool` and delays each reset and step answer by a drawn number of
seconds: an ``asyncio`` sleep, so the episodes' waits overlap as a remote env's would, and no core
is used. Observations, rewards and the order of results are the wrapped pool's: with
``rollout.lockstep`` a run samples the same tokens with and without it.

The delay is ``latency_s`` exactly when ``latency_sigma`` is 0, else log-normal with mean
``latency_s`` and shape ``latency_sigma`` (a few slow answers among many quick ones, like page loads),
drawn from a generator seeded by *seed* (timing only).
"""
from __future__ import annotations

import asyncio
import math
import random
from typing import Any

from .pool import EnvPool


class LatencyPool(EnvPool):
    """*inner*, with every ``reset`` and ``step`` answered *latency_s* seconds (mean) later."""

    def __init__(self, inner: EnvPool, latency_s: float, sigma: float = 0.0, seed: int = 0) -> None:
        if not (math.isfinite(latency_s) and latency_s >= 0):
            raise ValueError(f"env.latency_s must be a number of seconds >= 0, got {latency_s!r}")
        if not (math.isfinite(sigma) and sigma >= 0):
            raise ValueError(f"env.latency_sigma must be >= 0 (0: every answer takes latency_s), got {sigma!r}")
        self.inner, self.latency_s, self.sigma = inner, float(latency_s), float(sigma)
        self._rng = random.Random(seed)
        #: Seconds of delay added so far, and the answers delayed.
        self.waited_s, self.delayed = 0.0, 0

    def delay(self) -> float:
        """The next answer's delay in seconds."""
        if self.sigma == 0 or self.latency_s == 0:
            return self.latency_s
        return self._rng.lognormvariate(math.log(self.latency_s) - self.sigma ** 2 / 2, self.sigma)

    async def _later(self, answer: Any) -> Any:
        seconds = self.delay()
        self.waited_s += seconds
        self.delayed += 1
        await asyncio.sleep(seconds)
        return answer

    async def create(self) -> str:
        return await self.inner.create()

    async def reset(self, session: str, task_id: int) -> str:
        return await self._later(await self.inner.reset(session, task_id))

    async def step(self, session: str, action: str, seq: int | None = None) -> tuple[str, float, bool, dict]:
        return await self._later(await self.inner.step(session, action, seq))

    async def close(self, session: str) -> None:
        await self.inner.close(session)

    async def info(self) -> dict[str, Any]:
        return await self.inner.info()

    async def tasks(self) -> dict[str, Any] | None:
        return await self.inner.tasks()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:  # the wrapped pool's own extras (splits, describer, urls, ...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

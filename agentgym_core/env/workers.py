"""The worker threads that run env code for the env server, and how many calls may run at once.

CPython runs one thread's Python at a time (the GIL). Env calls that compute gain nothing from
running side by side, and every extra computing thread makes the event loop wait longer for its
turn: on a 2-core machine, ``/health`` took 0.1-0.4 s (p50 0.14 s) while 64 threads stepped the
ecommerce env, 4 ms while 2 did, for the same steps per second (docs/BENCHMARKS.md, ``bench/
batch_health.py``). Env calls that wait (on a browser, a JVM, a socket) do gain from more threads.
:class:`EnvCalls` lets as many run as pay off, by how busy the process keeps a core.
"""
from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds between two looks at how busy env code keeps the process (:class:`EnvCalls`).
ADAPT_EVERY = 0.5
#: The GIL switch interval while adapting (CPython's default: 5 ms): how long a computing env thread may
#: keep the event loop waiting. With 2 env threads, 1 ms took /health's p99 from 0.2 s to 38 ms.
SWITCH_INTERVAL = 0.001


_seen: dict[str, int] = {}  # thread id -> its ran + waited nanoseconds at the last look
_total = 0                  # nanoseconds counted so far, threads that have ended included
_seen_lock = threading.Lock()


def busy_seconds() -> float:
    """Seconds this process's threads have run or waited for a CPU (Linux: each thread's ``schedstat``),
    counted so that it never goes down: a thread that ended keeps what it had when last seen (its
    ``schedstat`` is gone with it), and one that vanishes while being read is skipped.

    A thread waiting for the GIL sleeps, so it is not counted; on a loaded machine, the thread holding
    the GIL while it waits for a CPU is: computing env code then keeps a core "busy" however little CPU
    the process gets. Elsewhere: the process's CPU time."""
    global _total
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return time.process_time()
    now: dict[str, int] = {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat", "rb") as stat:
                ran, waited, _ = stat.read().split()
            now[tid] = int(ran) + int(waited)
        except (OSError, ValueError):  # the thread ended between the listing and the read
            continue
    if not now:
        return time.process_time()
    with _seen_lock:
        for tid, value in now.items():
            _total += max(0, value - _seen.get(tid, 0))
        _seen.clear()
        _seen.update(now)
        return _total / 1e9


def next_limit(limit: int, busy: float, waited: bool, workers: int) -> int:
    """How many env calls to let run at once after a window in which the process used *busy* CPU cores
    (:func:`busy_seconds` per second) and calls had to wait for their turn (*waited*): halved (to 2 at least)
    while the process keeps a core busy (more threads would only wait for the GIL), doubled (to *workers* at
    most) while calls wait and it keeps under 0.7 of a core busy (the calls wait on something else: a browser,
    a JVM, a socket), else kept. Env code that computes outside the GIL (numpy) on several cores at once is
    held to 2 threads too: serve it with ``--fixed-workers``."""
    if busy >= 0.9:
        return min(workers, max(2, limit // 2))
    if waited and busy < 0.7:
        return min(workers, limit * 2)
    return limit


class EnvCalls:
    """The threads running env code: at most :attr:`limit` take calls (:func:`next_limit`), started as needed.

    Calls wait in one queue (its lock is C code the event loop never waits on) and a thread takes the
    next one as soon as it ends the last, without a turn of the event loop; idle threads sleep on the
    queue, not on the GIL. Threads above a lowered limit sleep after their call until it rises again.
    """

    def __init__(self, workers: int, adapt: bool, name: str) -> None:
        self.workers, self.adapt, self.name = workers, adapt, name
        self.limit = min(workers, 2) if adapt else workers
        self.threads = 0  # started (changed under self._turn, like self._parked)
        self._parked = 0
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._turn = threading.Condition()
        self._waited = False
        self._timer: asyncio.TimerHandle | None = None
        self._switch: float | None = None  # the interval open() replaced
        self._since, self._busy = time.monotonic(), busy_seconds()

    def open(self) -> None:
        """Before the first call: while adapting, the process switches threads every :data:`SWITCH_INTERVAL`."""
        if self.adapt and sys.getswitchinterval() > SWITCH_INTERVAL:
            self._switch = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_INTERVAL)

    async def run(self, fn: Callable[[], Any]) -> Any:
        """*fn*'s result (or exception), called in one of the threads when its turn comes."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((fn, loop, future, time.monotonic()))
        self._look()
        if self.adapt and self._timer is None:  # looks again even while every thread blocks in a call
            self._timer = loop.call_later(ADAPT_EVERY, self._tick)
        return await future

    def close(self) -> None:
        """Stop the threads once the calls already queued are done (a call still running finishes first)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        with self._turn:
            for _ in range(self.threads):
                self._jobs.put(None)
            self.limit = self.workers
            self._turn.notify_all()
        if self._switch is not None and sys.getswitchinterval() == SWITCH_INTERVAL:
            sys.setswitchinterval(self._switch)
        self._switch = None

    def _tick(self) -> None:
        self._timer = None
        self._look()
        if self._jobs.qsize():
            self._timer = asyncio.get_running_loop().call_later(ADAPT_EVERY, self._tick)

    def _look(self) -> None:
        """On the event loop: adapt the limit once a window has passed; wake or start threads up to it."""
        now = time.monotonic()
        if self.adapt and now - self._since >= ADAPT_EVERY:
            busy = busy_seconds()
            waited = self._waited or self._jobs.qsize() > 0
            self.limit = next_limit(self.limit, max(0.0, busy - self._busy) / (now - self._since), waited,
                                    self.workers)
            self._since, self._busy, self._waited = now, busy, False
        if self.threads - self._parked >= self.limit or not self._jobs.qsize():
            return
        with self._turn:
            if self._parked:
                self._turn.notify(self.limit - (self.threads - self._parked))
                return
            self.threads += 1
        threading.Thread(target=self._work, name=f"env-{self.name}", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, loop, future, queued = job
            if time.monotonic() - queued > 0.001:
                self._waited = True
            try:
                outcome, failed = fn(), False
            except BaseException as exc:  # handed to the caller, as an executor does
                outcome, failed = exc, True
            try:
                loop.call_soon_threadsafe(_settle, future, outcome, failed)
            except RuntimeError:  # the event loop is closed: nobody waits for this call any more
                pass
            del job, fn, outcome
            if self.threads - self._parked > self.limit:
                with self._turn:
                    while self.threads - self._parked > self.limit:
                        self._parked += 1
                        self._turn.wait()
                        self._parked -= 1


def _settle(future: asyncio.Future, outcome: Any, failed: bool) -> None:
    if not future.done():  # not cancelled meanwhile
        if failed:
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

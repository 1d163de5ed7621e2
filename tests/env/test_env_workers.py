"""How many env calls the server runs at once (agentgym_core.env.workers): the rule, and the threads
following it for calls that wait (side by side) and calls that compute (two at a time)."""
from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import pytest

from agentgym_core.env.workers import SWITCH_INTERVAL, EnvCalls, busy_seconds, next_limit


@pytest.mark.parametrize("limit, busy, waited, workers, expected", [
    (8, 0.95, True, 64, 4),     # a core busy: fewer threads
    (3, 0.95, True, 64, 2),     # ... but never under 2
    (2, 0.95, False, 64, 2),
    (8, 0.95, False, 1, 1),     # nor over --workers
    (2, 0.30, True, 64, 4),     # calls waited, the core is mostly idle: more threads
    (32, 0.30, True, 48, 48),   # ... up to --workers
    (8, 0.30, False, 64, 8),    # nothing waited: kept
    (8, 0.80, True, 64, 8),     # between 0.7 and 0.9: kept
])
def test_next_limit(limit, busy, waited, workers, expected):
    assert next_limit(limit, busy, waited, workers) == expected


class Peak:
    """Counts the calls running at once."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self._lock = threading.Lock()

    def call(self, work) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            work()
        finally:
            with self._lock:
                self.now -= 1


async def rounds(calls: EnvCalls, work, n: int, until, timeout: float) -> Peak:
    """Rounds of *n* concurrent calls of *work* until *until()* or *timeout*; the last round's peak."""
    deadline = time.monotonic() + timeout
    while True:
        peak = Peak()
        await asyncio.gather(*(calls.run(lambda p=peak: p.call(work)) for _ in range(n)))
        if until() or time.monotonic() > deadline:
            return peak


def test_calls_that_wait_come_to_run_side_by_side():
    calls = EnvCalls(16, True, "test")
    assert calls.limit == 2

    async def go():
        await rounds(calls, lambda: time.sleep(0.1), 16, lambda: calls.limit == 16, timeout=20)
        assert calls.limit == 16
        assert (await rounds(calls, lambda: time.sleep(0.1), 16, lambda: True, timeout=0)).most == 16

    try:
        asyncio.run(go())
    finally:
        calls.close()


def _burn(seconds: float = 0.02) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.mark.skipif(not os.path.exists(f"/proc/self/task/{threading.get_native_id()}/schedstat"),
                    reason="needs Linux's per-thread schedstat (elsewhere busy is CPU time, lower on a loaded machine)")
def test_calls_that_compute_run_two_at_a_time():
    calls = EnvCalls(16, True, "test")
    try:
        started = time.monotonic()
        peak = asyncio.run(rounds(calls, _burn, 16, lambda: time.monotonic() - started > 2.5, timeout=10))
        assert calls.limit == 2 and peak.most == 2
        assert calls.threads == 2
    finally:
        calls.close()


def test_fixed_workers_run_them_all_at_once_and_keep_the_switch_interval():
    before = sys.getswitchinterval()
    calls = EnvCalls(8, False, "test")
    calls.open()
    try:
        assert sys.getswitchinterval() == before
        assert asyncio.run(rounds(calls, lambda: time.sleep(0.2), 8, lambda: True, timeout=0)).most == 8
    finally:
        calls.close()


def test_open_shortens_the_switch_interval_and_close_restores_it():
    before = sys.getswitchinterval()
    assert before > SWITCH_INTERVAL
    calls = EnvCalls(4, True, "test")
    calls.open()
    try:
        assert sys.getswitchinterval() == SWITCH_INTERVAL
    finally:
        calls.close()
    assert sys.getswitchinterval() == before


def test_a_raising_call_hands_its_exception_to_the_caller_and_the_threads_go_on():
    calls = EnvCalls(2, True, "test")

    def boom():
        raise ValueError("env exploded")

    async def go():
        with pytest.raises(ValueError, match="env exploded"):
            await calls.run(boom)
        return await calls.run(lambda: 41 + 1)

    try:
        assert asyncio.run(go()) == 42
    finally:
        calls.close()


def test_busy_seconds_counts_a_computing_thread():
    before = busy_seconds()
    _burn(0.2)
    assert busy_seconds() - before >= 0.15


def test_busy_seconds_never_goes_down_when_threads_end():
    """A thread's time stays counted after it ends (its schedstat is gone with it): the figure the limit is
    adapted from never drops, so a window in which threads end is not read as a window of negative work."""
    burned, leave = threading.Event(), threading.Event()

    def work():
        _burn(0.1)
        burned.set()
        leave.wait(10)

    before = busy_seconds()
    worker = threading.Thread(target=work)
    worker.start()
    burned.wait(10)
    middle = busy_seconds()  # the worker's 0.1 s counted while it lives
    leave.set()
    worker.join()
    after = busy_seconds()  # ... and still once it has ended
    assert middle - before >= 0.08 and after >= middle

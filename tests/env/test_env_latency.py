"""``env.latency_s``: every answer of an env pool arrives later, the waits overlap, the answers are the env's."""
from __future__ import annotations

import asyncio
import statistics
import time

import pytest

from agentgym_core.env.latency import LatencyPool
from agentgym_core.env.launcher import open_env_pool

TOY = "agentgym_env_toys:CounterEnv"


async def _episode(pool, task_id: int) -> list:
    sid = await pool.create()
    out = [await pool.reset(sid, task_id)]
    for n in range(1, 3):
        out.append(await pool.step(sid, "inc", seq=n))
    await pool.close(sid)
    return out


def _timed(pool, episodes: int) -> tuple[list, float]:
    async def run():
        start = time.perf_counter()
        try:
            results = await asyncio.gather(*(_episode(pool, t) for t in range(episodes)))
        finally:
            await pool.aclose()
        return results, time.perf_counter() - start
    return asyncio.run(run())


@pytest.mark.parametrize("local", [True, False], ids=["in-process", "launched-server"])
def test_answers_are_the_envs_and_each_waits_while_the_others_wait_too(plugin_manager, local):
    plain, _ = _timed(open_env_pool({"name": TOY}, plugin_manager, local=local), 8)
    pool = open_env_pool({"name": TOY, "latency_s": 0.4}, plugin_manager, local=local)
    assert isinstance(pool, LatencyPool)
    slow, seconds = _timed(pool, 8)
    assert slow == plain  # the same observations, rewards and ends
    assert pool.delayed == 8 * 3 and pool.waited_s == pytest.approx(8 * 3 * 0.4)
    # one episode's reset and two steps wait 1.2 s; the 8 episodes wait side by side, not one after another (9.6 s)
    assert 1.2 <= seconds < 6.0


def test_no_latency_leaves_the_pool_as_it_was(plugin_manager):
    pool = open_env_pool({"name": TOY}, plugin_manager, local=True)
    assert not isinstance(pool, LatencyPool)
    asyncio.run(pool.aclose())


def test_log_normal_delays_have_the_asked_mean_and_vary():
    pool = LatencyPool(object(), 2.0, sigma=0.8, seed=3)
    draws = [pool.delay() for _ in range(20000)]
    assert statistics.fmean(draws) == pytest.approx(2.0, rel=0.05)
    assert min(draws) < 0.6 and max(draws) > 8.0  # a few slow answers among quick ones
    again = LatencyPool(object(), 2.0, sigma=0.8, seed=3)
    assert [again.delay() for _ in range(5)] == draws[:5]
    assert {LatencyPool(object(), 2.0).delay() for _ in range(3)} == {2.0}

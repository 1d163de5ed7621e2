"""HTTPEnvPool against real servers on loopback: spreading, errors, retries, exactly-once, dead servers."""
from __future__ import annotations

import asyncio
import os
import signal

import pytest

from agentgym_core.env.client import HTTPEnvPool
from agentgym_core.env.errors import EnvAuthError, EnvRaised, EnvServerFull, EnvSessionNotFound, EnvUnavailable
from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.env.server import ServerSettings
from agentgym_core.env.host import ServerThread, build_env_server

TOY = "agentgym_env_toys:CounterEnv"


def serve(**settings) -> ServerThread:
    return ServerThread(build_env_server(TOY, settings=ServerSettings(**settings)))


@pytest.mark.parametrize("fast_transport, batch", [(True, True), (True, False), (False, False)])
def test_sessions_spread_over_servers_and_play_an_episode(fast_transport, batch):
    async def scenario(urls):
        pool = HTTPEnvPool(urls, timeout=10, unavailable_after=5, fast_transport=fast_transport, batch=batch)
        try:
            sessions = [await pool.create() for _ in range(4)]
            assert sorted(s.split(":")[0] for s in sessions) == ["0", "0", "1", "1"]
            obs = await asyncio.gather(*(pool.reset(s, 1) for s in sessions))
            assert obs == ["value 0, target 2"] * 4
            for seq in (1, 2):
                results = await asyncio.gather(*(pool.step(s, "inc", seq=seq) for s in sessions))
            assert all(r == ("value 2", 1.0, True, {"success": True}) for r in results)
            assert await pool.observation(sessions[0]) == "value 2"
            info = await pool.info()
            assert info["splits"]["train"] == 100 and info["action_format"] == "free"
            await pool.close(sessions[0])
            await pool.close(sessions[0])  # idempotent
            with pytest.raises(EnvSessionNotFound) as caught:
                await pool.step(sessions[0], "inc")
            message = str(caught.value)
            assert urls[int(sessions[0].split(":")[0])] in message and "POST /step" in message and "unknown session id" in message
            assert sorted(h["sessions"] for h in await pool.health()) == [1, 2]
        finally:
            await pool.aclose()

    with serve() as a, serve() as b:
        asyncio.run(scenario([a.url, b.url]))


def test_client_errors_are_clear_exceptions():
    async def scenario(url):
        anonymous = HTTPEnvPool([url], unavailable_after=2)
        with pytest.raises(EnvAuthError, match="401.*Bearer"):
            await anonymous.create()
        await anonymous.aclose()
        pool = HTTPEnvPool([url], token="tok", unavailable_after=2)
        try:
            sid = await pool.create()
            await pool.reset(sid, 0)
            with pytest.raises(EnvRaised, match="ValueError: the counter exploded"):
                await pool.step(sid, "boom", seq=1)
            assert await pool.reset(sid, 0) == "value 0, target 1"
            await pool.create()
            with pytest.raises(EnvServerFull, match="429.*maximum of 2 sessions"):
                await pool.create()
            with pytest.raises(EnvSessionNotFound):
                await pool.step("not-a-session", "inc")
        finally:
            await pool.aclose()

    with serve(token="tok", max_sessions=2) as srv:
        asyncio.run(scenario(srv.url))


def test_retried_numbered_step_is_applied_once():
    """The first attempt times out while the env is still working; the retry gets the stored result."""
    async def scenario(url):
        pool = HTTPEnvPool([url], timeout=0.4, unavailable_after=15)
        try:
            sid = await pool.create()
            await pool.reset(sid, 4)
            obs, _, _, _ = await pool.step(sid, "slowinc 1.0", seq=1)
            assert obs == "value 1"
            assert await pool.observation(sid) == "value 1"  # applied once, not once per attempt
            obs, _, _, _ = await pool.step(sid, "inc", seq=2)
            assert obs == "value 2"
            # without a seq number a timed-out step is not retried: it could apply twice
            with pytest.raises(EnvUnavailable, match="not idempotent"):
                await pool.step(sid, "slowinc 1.0")
        finally:
            await pool.aclose()

    with serve() as srv:
        asyncio.run(scenario(srv.url))


def test_full_server_is_skipped_on_create():
    async def scenario(urls):
        pool = HTTPEnvPool(urls, unavailable_after=2)
        try:
            sessions = [await pool.create() for _ in range(3)]
            assert sorted(s.split(":")[0] for s in sessions) == ["0", "1", "1"]  # server 0 holds only one
            with pytest.raises(EnvServerFull):
                await pool.create()
        finally:
            await pool.aclose()

    with serve(max_sessions=1) as a, serve(max_sessions=2) as b:
        asyncio.run(scenario([a.url, b.url]))


@pytest.mark.slow
def test_killed_server_raises_env_unavailable_while_other_server_continues():
    bound = 1.5

    async def scenario(launcher: EnvLauncher):
        pool = HTTPEnvPool(launcher.urls, timeout=5, unavailable_after=bound)
        try:
            doomed, alive = await pool.create(), await pool.create()
            assert {doomed.split(":")[0], alive.split(":")[0]} == {"0", "1"}
            if doomed.startswith("1:"):
                doomed, alive = alive, doomed
            for sid in (doomed, alive):
                await pool.reset(sid, 4)
                await pool.step(sid, "inc", seq=1)
            os.kill(launcher.procs[0].pid, signal.SIGKILL)
            launcher.procs[0].wait()
            # the guard only keeps a broken client from hanging the suite; the client gives up at ~bound
            with pytest.raises(EnvUnavailable, match="unavailable_after"):
                await asyncio.wait_for(pool.step(doomed, "inc", seq=2), timeout=bound + 20)
            with pytest.raises(EnvUnavailable):
                await asyncio.wait_for(pool.step(doomed, "inc"), timeout=bound + 20)
            assert (await pool.step(alive, "inc", seq=2))[0] == "value 2"
            fresh = await asyncio.wait_for(pool.create(), timeout=bound + 20)
            assert fresh.startswith("1:")  # new sessions go to the live server
            await pool.reset(fresh, 0)
            assert (await pool.step(fresh, "inc", seq=1))[2] is True
        finally:
            await pool.aclose()

    with EnvLauncher(TOY, servers=2) as launcher:
        asyncio.run(scenario(launcher))


def test_concurrent_resets_and_steps_share_one_batch_request():
    server = build_env_server(TOY)
    paths: list[str] = []
    app = server.app

    async def counting(scope, receive, send):  # records each request's path, then serves it as usual
        if scope["type"] == "http":
            paths.append(scope["path"])
        await app(scope, receive, send)

    server.app = counting

    async def scenario(url):
        pool = HTTPEnvPool([url], timeout=10, unavailable_after=5)
        try:
            sessions = [await pool.create() for _ in range(6)]
            paths.clear()
            obs = await asyncio.gather(*(pool.reset(s, task) for task, s in enumerate(sessions)))
            assert obs == [f"value 0, target {task % 5 + 1}" for task in range(6)]  # each reset got its own answer
            assert paths == ["/batch"]
            paths.clear()
            steps = await asyncio.gather(*(pool.step(s, "inc", seq=1) for s in sessions),
                                         *(pool.reset(s, 3) for s in sessions[:2]))
            assert paths == ["/batch"] and len(steps) == 8
            assert await pool.reset(sessions[0], 4) == "value 0, target 5"  # alone: a plain /reset
            assert paths[-1] == "/reset"
        finally:
            await pool.aclose()

    with ServerThread(server) as thread:
        asyncio.run(scenario(thread.url))

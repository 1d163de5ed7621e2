"""A ``POST /create`` whose answer is late is resent with the same idempotency key, and the
server hands back the session it is already building: no error, and no leaked session."""
from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from agentgym_core.env.client import HTTPEnvPool
from agentgym_core.env.launcher import EnvLauncher

SLOW = "agentgym_robust_envs:SlowCreateEnv"


@pytest.mark.slow
def test_timed_out_create_is_retried_without_leaking_a_session(tmp_path):
    stall_file, built_file = tmp_path / "stall", tmp_path / "built"
    options = {"stall_file": str(stall_file), "stall": 3.0, "built_file": str(built_file)}
    with EnvLauncher(SLOW, options=options, ttl=0) as launcher:
        url = launcher.urls[0]
        built_file.write_text("")  # forget the server's start-up probe
        stall_file.touch()  # the next construction takes 3 s, three times the client's timeout
        stalled_until = time.monotonic() + 3.0

        async def scenario() -> None:
            pool = HTTPEnvPool([url], timeout=1.0, unavailable_after=10.0)
            try:
                sid = await asyncio.wait_for(pool.create(), timeout=30)
                assert await pool.reset(sid, 0) == "task 0"
                assert not stall_file.exists()  # the stall did happen
                await asyncio.sleep(max(0.0, stalled_until + 1.0 - time.monotonic()))  # let a stalled create land
                sessions = (await pool.health())[0]["sessions"]
                assert sessions == 1, f"{sessions - 1} session(s) leaked next to {sid} by the resent /create"
                assert built_file.read_text().count("built") == 1  # one env built, however often /create was sent
            finally:
                await pool.aclose()

        asyncio.run(scenario())
        assert httpx.get(f"{url}/health", timeout=5).json()["sessions"] == 0


def test_create_with_the_same_key_returns_the_same_session(echo_server):
    url = echo_server.urls[0]
    with httpx.Client(base_url=url, timeout=10) as http:
        first = http.post("/create", json={"idempotency_key": "run-1/episode-7"}).json()
        again = http.post("/create", json={"idempotency_key": "run-1/episode-7"}).json()
        other = http.post("/create", json={"idempotency_key": "run-1/episode-8"}).json()
        plain = [http.post("/create").json()["id"], http.post("/create", json={}).json()["id"]]
        assert again["id"] == first["id"] and other["id"] != first["id"] and len(set(plain) | {first["id"], other["id"]}) == 4
        for bad in (7, "", "x" * 201, ["k"]):
            reply = http.post("/create", json={"idempotency_key": bad})
            assert reply.status_code == 422 and "idempotency_key" in reply.json()["error"], reply.text
        for sid in (first["id"], other["id"], *plain):
            assert http.post("/close", json={"id": sid}).status_code == 200
        # a closed session's key is forgotten: the key may open a new session
        assert http.post("/create", json={"idempotency_key": "run-1/episode-7"}).json()["id"] not in {first["id"], *plain}


def test_lost_create_is_not_resent_to_a_server_that_does_not_dedupe():
    """An AgentGym server ignores idempotency_key: resending could open a second session there."""
    from types import SimpleNamespace

    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from agentgym_core.env.errors import EnvUnavailable
    from agentgym_core.env.host import ServerThread

    creates = []

    async def create(request):
        creates.append(await request.json())
        await asyncio.sleep(2.0)  # longer than the client's timeout
        return JSONResponse({"id": len(creates)})

    async def health(request):
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[Route("/create", create, methods=["POST"]), Route("/health", health)])

    async def scenario(url: str) -> None:
        pool = HTTPEnvPool([url], timeout=0.5, unavailable_after=5.0)
        try:
            with pytest.raises(EnvUnavailable, match="does not dedupe creates"):
                await asyncio.wait_for(pool.create(), timeout=20)
        finally:
            await pool.aclose()

    with ServerThread(SimpleNamespace(app=app)) as server:
        asyncio.run(scenario(server.url))
    assert len(creates) == 1 and isinstance(creates[0]["idempotency_key"], str)

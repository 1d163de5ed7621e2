"""``POST /batch`` caps over real HTTP on loopback: over a cap a 413 naming it (and no op runs), at the
cap the batch runs; the caps reach ``/health``, ``/openapi.json`` and ``agentgym env serve``; the
framework's own client stays within the default cap."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agentgym_core.env.batching import MAX_BATCH
from agentgym_core.env.client import HTTPEnvPool
from agentgym_core.env.errors import EnvRequestError
from agentgym_core.env.host import ServerThread, build_env_server
from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.env.server import ServerSettings

TOY = "agentgym_env_toys:CounterEnv"
JSON = {"content-type": "application/json"}


def serve(**settings) -> ServerThread:
    return ServerThread(build_env_server(TOY, settings=ServerSettings(**settings)))


def steps(sid: int, n: int, action: str = "inc") -> dict:
    return {"ops": [{"op": "step", "id": sid, "action": action} for _ in range(n)]}


def body_of(size: int, sid: int) -> bytes:
    """A one-step ``/batch`` body of exactly *size* bytes."""
    bare = json.dumps(steps(sid, 1, ""), separators=(",", ":"))
    return json.dumps(steps(sid, 1, "x" * (size - len(bare))), separators=(",", ":")).encode()


def open_session(http: httpx.Client) -> int:
    sid = http.post("/create").json()["id"]
    assert http.post("/reset", json={"id": sid, "data_idx": 4}).status_code == 200  # target 5
    return sid


def test_a_batch_over_the_op_cap_is_a_422_naming_it_and_runs_no_op():
    """422, as for every request the schema forbids (its maxItems): schemathesis counts a 413 as accepting it."""
    with serve(max_batch_ops=4) as srv, httpx.Client(base_url=srv.url) as http:
        sid = open_session(http)
        resp = http.post("/batch", json=steps(sid, 5))
        assert resp.status_code == 422, resp.text
        body = resp.json()
        assert (body["limit"], body["received"], body["setting"], body["flag"]) == (4, 5, "max_batch_ops", "--max-batch-ops")
        assert "of 5 ops exceeds this server's cap of 4 ops" in body["error"]
        assert "send at most 4 ops per request" in body["error"] and "higher --max-batch-ops" in body["error"]
        assert http.get("/observation", params={"id": sid}).json() == "value 0, target 5"  # no op ran
        at_cap = http.post("/batch", json=steps(sid, 4)).json()["results"]
        assert [r["body"]["observation"] for r in at_cap] == ["value 1", "value 2", "value 3", "value 4"]


def test_a_batch_body_over_the_byte_cap_is_a_413_naming_it_with_or_without_content_length():
    with serve(max_batch_bytes=1000) as srv, httpx.Client(base_url=srv.url) as http:
        sid = open_session(http)
        big = body_of(1001, sid)
        resp = http.post("/batch", content=big, headers=JSON)
        assert resp.status_code == 413, resp.text
        body = resp.json()
        assert (body["limit"], body["received"], body["flag"]) == (1000, 1001, "--max-batch-bytes")
        assert "of 1001 bytes exceeds this server's cap of 1000 bytes" in body["error"]
        assert "send fewer ops" in body["error"] and "ServerSettings.max_batch_bytes" in body["error"]

        def chunks():  # no Content-Length: the cap holds while streaming too
            yield big[:600]
            yield big[600:]

        streamed = http.post("/batch", content=chunks(), headers=JSON)
        assert streamed.status_code == 413 and streamed.json()["received"] == 1001, streamed.text
        assert "more than 1000 bytes" in streamed.json()["error"]
        assert http.get("/observation", params={"id": sid}).json() == "value 0, target 5"  # no op ran
        at_cap = http.post("/batch", content=body_of(1000, sid), headers=JSON)
        assert at_cap.status_code == 200 and at_cap.json()["results"][0]["status"] == 200
        # the batch cap is the batch's own: a single step of the same size is held to --max-body only
        assert http.post("/step", json={"id": sid, "action": "x" * 1500}).status_code == 200


def test_the_smaller_of_max_body_and_max_batch_bytes_binds_and_is_named():
    with serve(max_body=500, max_batch_bytes=4000) as srv, httpx.Client(base_url=srv.url) as http:
        sid = open_session(http)
        resp = http.post("/batch", content=body_of(800, sid), headers=JSON)
        assert resp.status_code == 413 and (resp.json()["limit"], resp.json()["flag"]) == (500, "--max-body"), resp.text
        assert http.get("/health").json()["max_batch_bytes"] == 500


def test_health_and_openapi_say_the_caps():
    with serve(max_batch_ops=8, max_batch_bytes=5000) as srv, httpx.Client(base_url=srv.url) as http:
        health = http.get("/health").json()
        assert (health["max_batch_ops"], health["max_batch_bytes"]) == (8, 5000)
        assert health["env_calls_at_once"] >= 1
        batch = http.get("/openapi.json").json()["paths"]["/batch"]["post"]
        ops = batch["requestBody"]["content"]["application/json"]["schema"]["properties"]["ops"]
        assert ops["maxItems"] == 8 and "413" in batch["responses"]
        assert set(ServerSettings.__dataclass_fields__) >= {"max_batch_ops", "max_batch_bytes", "adapt_workers"}


def test_serve_flags_reach_the_server():
    class Launcher(EnvLauncher):
        def command(self) -> list[str]:
            return super().command() + ["--max-batch-ops", "7", "--max-batch-bytes", "3000", "--workers", "5",
                                        "--fixed-workers"]

    with Launcher(TOY) as launcher:
        health = httpx.get(f"{launcher.urls[0]}/health", timeout=10).json()
    assert (health["max_batch_ops"], health["max_batch_bytes"], health["env_calls_at_once"]) == (7, 3000, 5)


def test_the_default_cap_holds_the_clients_largest_batch():
    """The client sends at most MAX_BATCH ops per request: the default cap must take them in one."""
    assert ServerSettings().max_batch_ops >= MAX_BATCH
    server = build_env_server(TOY, settings=ServerSettings(max_sessions=MAX_BATCH + 8))
    sizes: list[int] = []
    app = server.app

    async def counting(scope, receive, send):  # the number of ops of each /batch, then serves it as usual
        if scope["type"] == "http" and scope["path"] == "/batch":
            chunks = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            raw = b"".join(chunks)
            sizes.append(len(json.loads(raw)["ops"]))
            pending = [{"type": "http.request", "body": raw, "more_body": False}]

            async def replay():
                return pending.pop() if pending else await receive()

            await app(scope, replay, send)
            return
        await app(scope, receive, send)

    server.app = counting

    async def scenario(url: str) -> None:
        pool = HTTPEnvPool([url], timeout=30, unavailable_after=5)
        try:
            sessions = await asyncio.gather(*(pool.create() for _ in range(MAX_BATCH)))
            await asyncio.gather(*(pool.reset(s, 4) for s in sessions))
            out = await asyncio.gather(*(pool.step(s, "inc", seq=1) for s in sessions))
            assert {obs for obs, *_ in out} == {"value 1"}
        finally:
            await pool.aclose()

    with ServerThread(server) as srv:
        asyncio.run(scenario(srv.url))
    assert sizes and max(sizes) == MAX_BATCH


def test_the_client_against_a_lower_op_cap_fails_naming_the_flag():
    """The client does not read the server's cap: a server started below MAX_BATCH refuses its larger batches."""
    async def scenario(url: str) -> None:
        pool = HTTPEnvPool([url], timeout=10, unavailable_after=5)
        try:
            sessions = [await pool.create() for _ in range(3)]
            for s in sessions:
                await pool.reset(s, 4)  # one at a time: plain /reset
            out = await asyncio.gather(*(pool.step(s, "inc", seq=1) for s in sessions), return_exceptions=True)
            assert all(isinstance(e, EnvRequestError) and e.status == 422 for e in out), out
            assert "--max-batch-ops" in str(out[0]) and "cap of 2 ops" in str(out[0])
        finally:
            await pool.aclose()

    with serve(max_batch_ops=2) as srv:
        asyncio.run(scenario(srv.url))


@pytest.mark.parametrize("ops", [1, 2])
def test_ops_of_one_session_in_a_batch_still_apply_in_order(ops):
    """Ops run a bounded number at a time (workers), each taking its session's lock in op order."""
    with serve(workers=ops) as srv, httpx.Client(base_url=srv.url) as http:
        a, b = open_session(http), open_session(http)
        mixed = {"ops": [{"op": "step", "id": sid, "action": "inc"} for _ in range(4) for sid in (a, b)]}
        results = http.post("/batch", json=mixed).json()["results"]
        assert [r["body"]["observation"] for r in results[0::2]] == ["value 1", "value 2", "value 3", "value 4"]
        assert [r["body"]["observation"] for r in results[1::2]] == ["value 1", "value 2", "value 3", "value 4"]

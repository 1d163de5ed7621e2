"""StreamTransport against a raw asyncio HTTP server: chunked bodies, Connection: close, stale keep-alive."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from agentgym_core.env.transport import StreamTransport


async def _raw_server(handler):
    """A loopback server whose *handler(path, body)* returns raw response bytes and whether to close."""
    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                length = next((int(v) for k, _, v in (ln.partition(":") for ln in lines) if k.lower() == "content-length"), 0)
                body = await reader.readexactly(length)
                raw, close = handler(lines[0].split()[1], body)
                writer.write(raw)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def test_chunked_close_and_stale_connections():
    seen: list[str] = []

    def handler(path: str, body: bytes):
        seen.append(path)
        if path == "/chunked":
            return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n: 1\r\n1\r\n}\r\n0\r\n\r\n", False
        if path == "/close":
            return b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}", True
        if path == "/drop":  # answers, then silently drops the kept-alive connection
            return b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n\"ok\"", True
        echo = b'{"echo": ' + (body or b"null") + b"}"
        return b"HTTP/1.1 201 Created\r\ncontent-length: %d\r\n\r\n%s" % (len(echo), echo), False

    async def scenario() -> None:
        server, url = await _raw_server(handler)
        async with server, httpx.AsyncClient(transport=StreamTransport(), base_url=url, timeout=5) as http:
            resp = await http.post("/echo", json={"x": [1, 2]})
            assert resp.status_code == 201 and resp.json() == {"echo": {"x": [1, 2]}}
            assert (await http.get("/chunked")).json() == {"a": 1}
            assert (await http.get("/close")).json() == {}
            assert (await http.get("/drop")).json() == "ok"
            await asyncio.sleep(0.05)
            # the pooled connection is dead; the request goes out again on a fresh one
            assert (await http.post("/echo", json=1)).json() == {"echo": 1}
            many = await asyncio.gather(*(http.post("/echo", json=i) for i in range(20)))
            assert [r.json()["echo"] for r in many] == list(range(20))
        assert seen.count("/echo") == 22

    asyncio.run(scenario())


def test_errors_are_httpx_exceptions():
    async def scenario() -> None:
        server, url = await _raw_server(lambda path, body: (b"", False))
        port = int(url.rsplit(":", 1)[1])
        server.close()
        await server.wait_closed()
        async with httpx.AsyncClient(transport=StreamTransport(), timeout=2) as http:
            with pytest.raises(httpx.ConnectError):
                await http.get(f"http://127.0.0.1:{port}/x")

        async def silent(reader, writer):
            await asyncio.sleep(5)

        mute = await asyncio.start_server(silent, "127.0.0.1", 0)
        mute_url = f"http://127.0.0.1:{mute.sockets[0].getsockname()[1]}"
        async with mute, httpx.AsyncClient(transport=StreamTransport(), timeout=0.3) as http:
            with pytest.raises(httpx.ReadTimeout):
                await http.get(mute_url + "/x")

    asyncio.run(scenario())


def test_pool_retries_5xx_on_idempotent_calls_only():
    from agentgym_core.env.client import HTTPEnvPool
    from agentgym_core.env.errors import EnvRaised, EnvRequestError

    calls: list[str] = []

    def flaky(path: str, body: bytes):
        calls.append(path)
        if path in ("/reset", "/step") and calls.count(path) <= 2:
            return b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 19\r\n\r\n{\"error\": \"warming\"}", False
        if path == "/step" and b"boom" in body:
            err = b'{"error": "env raised", "needs_reset": true}'
            return b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: %d\r\n\r\n%s" % (len(err), err), False
        ok = b'{"observation": "fine", "reward": 0, "done": false, "info": {}}'
        return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(ok), ok), False

    async def scenario() -> None:
        server, url = await _raw_server(flaky)
        async with server:
            pool = HTTPEnvPool([url], unavailable_after=10, batch=False)
            assert await pool.reset("0:0", 1) == "fine"  # two 503s, then the answer
            assert calls.count("/reset") == 3
            with pytest.raises(EnvRequestError, match="503"):
                await pool.step("0:0", "look")  # no seq: a 5xx is not retried
            with pytest.raises(EnvRaised, match="env raised"):
                await pool.step("0:0", "boom", seq=1)  # a 503 (retried), then the env's own failure: final
            assert calls.count("/step") == 3
            await pool.aclose()

    asyncio.run(scenario())

"""A lean HTTP/1.1 keep-alive transport for ``httpx.AsyncClient`` on plain asyncio streams.

httpx's default transport (httpcore over anyio) spends ~10x the CPU of the request itself
on small JSON calls (encode/httpx#3215); env steps are exactly that, many thousands per
second. This transport sends each request in one write with TCP_NODELAY, keeps idle
connections per host, and raises httpx's own exception types, so retries and errors work
as with the default transport. It speaks plain ``http://`` only (``https`` URLs use httpx's).
"""
from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx

_MAX_HEAD = 64 * 1024


class StreamTransport(httpx.AsyncBaseTransport):
    """Pooled HTTP/1.1 connections (``max_idle`` kept per host) for plain-HTTP JSON APIs."""

    def __init__(self, max_idle: int = 1024) -> None:
        self.max_idle = max_idle
        self._idle: dict[tuple[str, int], list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = {}
        self._fallback: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            if self._fallback is None:
                self._fallback = httpx.AsyncHTTPTransport()
            return await self._fallback.handle_async_request(request)
        key = (request.url.host, request.url.port or 80)
        timeouts = request.extensions.get("timeout", {})
        payload = _encode(request, await request.aread())
        idle = self._idle.setdefault(key, [])
        while idle:  # a pooled connection the server may have closed meanwhile
            conn = idle.pop()
            if conn[0].at_eof() or conn[1].is_closing():
                conn[1].close()
                continue
            try:
                return await self._exchange(key, conn, payload, request, timeouts)
            except _Stale:
                continue
        conn = await self._connect(key, request, timeouts.get("connect"))
        try:
            return await self._exchange(key, conn, payload, request, timeouts)
        except _Stale as exc:
            raise httpx.RemoteProtocolError(f"server closed the connection without a response: {exc}", request=request) from None

    async def _connect(self, key: tuple[str, int], request: httpx.Request, timeout: float | None):
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(*key, limit=_MAX_HEAD), timeout)
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {key[0]}:{key[1]} timed out", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {key[0]}:{key[1]}: {exc}", request=request) from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    async def _exchange(self, key, conn, payload: bytes, request: httpx.Request, timeouts: dict[str, Any]) -> httpx.Response:
        reader, writer = conn
        got_bytes = False
        try:
            writer.write(payload)
            await asyncio.wait_for(writer.drain(), timeouts.get("write"))
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeouts.get("read"))
            got_bytes = True
            status, headers, length, chunked, keep = _parse_head(head, request)
            if chunked:
                body = await asyncio.wait_for(_read_chunked(reader), timeouts.get("read"))
            elif length is not None:
                body = await asyncio.wait_for(reader.readexactly(length), timeouts.get("read"))
            else:
                body = await asyncio.wait_for(reader.read(), timeouts.get("read"))
                keep = False
        except asyncio.TimeoutError:
            writer.close()
            raise httpx.ReadTimeout(f"no answer from {key[0]}:{key[1]} within the timeout", request=request) from None
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
            writer.close()
            if not got_bytes and isinstance(exc, (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError)):
                raise _Stale(str(exc)) from None
            raise httpx.ReadError(f"connection to {key[0]}:{key[1]} failed: {exc!r}", request=request) from None
        if keep and len(self._idle[key]) < self.max_idle:
            self._idle[key].append(conn)
        else:
            writer.close()
        return httpx.Response(status, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for _, writer in conns:
                writer.close()
        self._idle.clear()
        if self._fallback is not None:
            await self._fallback.aclose()


class _Stale(Exception):
    """The connection died before any byte of the answer: the server never saw the request."""


def _encode(request: httpx.Request, body: bytes) -> bytes:
    target = request.url.raw_path.decode("ascii")
    lines = [f"{request.method} {target} HTTP/1.1"]
    for name, value in request.headers.raw:
        if name.lower() not in (b"transfer-encoding", b"content-length"):
            lines.append(f"{name.decode('latin-1')}: {value.decode('latin-1')}")
    lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _parse_head(head: bytes, request: httpx.Request):
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"bad status line {lines[0]!r}", request=request)
    headers: list[tuple[str, str]] = []
    length, chunked, keep = None, False, parts[0] == "HTTP/1.1"
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        name, value = name.strip(), value.strip()
        lower = name.lower()
        if lower == "content-length":
            length = int(value)
        elif lower == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
            continue  # the body handed to httpx is already de-chunked
        elif lower == "connection":
            keep = value.lower() != "close" if keep else value.lower() == "keep-alive"
        headers.append((name, value))
    return int(parts[1]), headers, length, chunked, keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)

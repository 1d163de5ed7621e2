"""``HTTPEnvPool``: the :class:`~agentgym_core.env.pool.EnvPool` interface over env servers.

Sessions are spread over the servers (least loaded first) and stick to the server that
created them; a session id reads ``"<server index>:<remote id>"``. Idempotent calls (reset,
observation, close, info) and numbered steps are retried with backoff on connection errors
and on 5xx other than an env failure; a server that stays unreachable for
``unavailable_after`` seconds makes the call raise :class:`EnvUnavailable` (bounded: at
most ``unavailable_after + 2 * timeout``: the first attempt, the retries, and one last attempt
started just before the bound). A create whose answer is lost is resent to the same server
with the same ``idempotency_key``, which the server dedupes (see :meth:`HTTPEnvPool.create`).
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_before_delay,
    wait_exponential,
    wait_random,
)

from .batching import EnvCallBatcher
from .errors import (
    EnvAuthError,
    EnvRaised,
    EnvRequestError,
    EnvServerFull,
    EnvSessionNotFound,
    EnvUnavailable,
)
from .pool import EnvPool
from .transport import StreamTransport

log = logging.getLogger("agentgym.env.client")

#: Errors after which the request surely never reached the server (safe to resend anything).
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRY_STATUS = (502, 503, 504)
_JSON = {"content-type": "application/json"}
_NOT_JSON = object()


class _Retry(Exception):
    """One failed attempt that may be retried; ``cause`` says why, ``sent`` whether the server may have acted."""

    def __init__(self, cause: str, sent: bool = True) -> None:
        super().__init__(cause)
        self.cause, self.sent = cause, sent


class HTTPEnvPool(EnvPool):
    """Async, pooled client of one or more env servers serving the same env."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        token: str | None = None,
        timeout: float = 60.0,
        unavailable_after: float = 30.0,
        max_connections: int = 1024,
        fast_transport: bool = True,
        batch: bool = True,
        on_close: Callable[[], Any] | None = None,
    ) -> None:
        if not urls:
            raise ValueError("HTTPEnvPool needs at least one server URL")
        self.urls = [u.rstrip("/") for u in urls]
        self.token = token
        self.timeout = float(timeout)
        self.unavailable_after = float(unavailable_after)
        self.max_connections = max_connections
        #: Use :class:`~agentgym_core.env.transport.StreamTransport` (False: httpx's default transport).
        self.fast_transport = fast_transport
        #: Send concurrent numbered steps and resets to the same server as one ``POST /batch`` (agentgym servers only).
        self.batch = batch
        self._batcher = EnvCallBatcher(self._send_chunk, lambda server: self.urls[server])
        self.on_close = on_close
        self._load = [0] * len(self.urls)
        self._failed_at = [0.0] * len(self.urls)
        self._dedupes: list[bool | None] = [None] * len(self.urls)  # honours idempotency_key on /create?
        self._open: set[str] = set()
        self._turn = 0
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- transport ---------------------------------------------------------------------------
    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            headers = {"accept-encoding": "identity"}
            if self.token:
                headers["authorization"] = f"Bearer {self.token}"
            timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 5.0))
            if self.fast_transport:
                transport = StreamTransport(max_idle=self.max_connections)
                self._client = httpx.AsyncClient(headers=headers, timeout=timeout, transport=transport)
            else:
                limits = httpx.Limits(max_connections=self.max_connections, max_keepalive_connections=self.max_connections)
                self._client = httpx.AsyncClient(headers=headers, timeout=timeout, limits=limits)
            self._loop = loop
        return self._client

    async def _attempt(self, server: int, method: str, path: str, body: Any, params: Any, idempotent: bool,
                       retry_500: bool = True) -> httpx.Response:
        url = self.urls[server]
        try:
            content = None if body is None else json.dumps(body, separators=(",", ":")).encode()
            resp = await self._http().request(method, url + path, content=content, params=params, headers=_JSON if content else None)
        except _UNSENT as exc:
            self._failed_at[server] = time.monotonic()
            raise _Retry(f"{type(exc).__name__}: {exc}", sent=False) from exc
        except httpx.TransportError as exc:
            self._failed_at[server] = time.monotonic()
            if idempotent:
                raise _Retry(f"{type(exc).__name__}: {exc}") from exc
            raise EnvUnavailable(
                f"env server {url} failed during {method} {path} ({type(exc).__name__}: {exc}); not retried "
                "because the call is not idempotent (steps sent with a seq number are retried)"
            ) from exc
        status = resp.status_code
        # 500 with "needs_reset" is the env's own failure: the same answer again, so not retried
        if idempotent and (status in _RETRY_STATUS or (retry_500 and status == 500 and b'"needs_reset"' not in resp.content)):
            raise _Retry(f"HTTP {status}: {resp.text[:200]}")
        return resp

    async def _call(self, server: int, method: str, path: str, *, body: Any = None, params: Any = None,
                    idempotent: bool = True, bound: float | None = None) -> Any:
        """One request, retried while allowed; returns the decoded JSON or raises a clear error."""
        bound = self.unavailable_after if bound is None else bound
        try:  # the common case: one request, no retry machinery
            resp = await self._attempt(server, method, path, body, params, idempotent)
        except _Retry as exc:
            if bound <= 0:
                raise self._unavailable(server, method, path, bound, exc.cause) from None
            retrying = AsyncRetrying(
                stop=stop_before_delay(bound),
                wait=wait_exponential(multiplier=0.05, max=1.0) + wait_random(0, 0.05),
                retry=retry_if_exception_type(_Retry),
                reraise=True,
            )
            try:
                async for attempt in retrying:
                    with attempt:
                        resp = await self._attempt(server, method, path, body, params, idempotent)
            except _Retry as again:
                raise self._unavailable(server, method, path, bound, again.cause) from None
        return _decode(resp, self.urls[server], f"{method} {path}")

    def _unavailable(self, server: int, method: str, path: str, bound: float, cause: str) -> EnvUnavailable:
        return EnvUnavailable(
            f"env server {self.urls[server]} stayed unavailable for {bound:g}s (env.unavailable_after) "
            f"on {method} {path}: {cause}. Is the server running and reachable?"
        )

    def _parse(self, session: str) -> tuple[int, int]:
        server, sep, rid = str(session).partition(":")
        if not sep or not server.isdigit() or not rid.isdigit() or int(server) >= len(self.urls):
            raise EnvSessionNotFound(
                f"{session!r} is not a session of this env pool (expected '<server>:<id>' from create())",
                status=404, url="-", endpoint="-", server_message="",
            )
        return int(server), int(rid)

    # -- EnvPool -----------------------------------------------------------------------------
    async def create(self) -> str:
        """Open a session on the least-loaded live server; full or dead servers are skipped.

        Creating is not idempotent, so the request carries a fresh ``idempotency_key``: when it
        may have reached a server but its answer is lost (a timeout, a dropped connection), it
        is resent there with the same key until ``unavailable_after``, and the server answers
        with the session that key opened instead of opening a second one. A server that does
        not dedupe (no ``idempotent_create`` in ``/health``: an AgentGym server) is not sent it
        again; a session it made anyway is its own to reap.
        """
        deadline = time.monotonic() + self.unavailable_after
        body = {"idempotency_key": uuid.uuid4().hex}
        skip: set[int] = set()  # got this create, may have acted on it, and cannot be asked again
        delay = 0.05
        while True:
            problems: list[str] = []
            full: EnvServerFull | None = None
            for server in self._order():
                if server in skip:
                    continue
                try:
                    data = await self._create_on(server, body, deadline, skip)
                except EnvUnavailable as exc:
                    problems.append(str(exc))
                    continue
                except EnvServerFull as exc:
                    full = exc
                    continue
                session = f"{server}:{_int(data, 'id', self.urls[server])}"
                self._load[server] += 1
                self._open.add(session)
                return session
            if full is not None and not problems:
                raise full
            if time.monotonic() + delay > deadline or len(skip) == len(self.urls):
                if full is not None:
                    raise full
                raise EnvUnavailable(
                    f"no env server reachable for {self.unavailable_after:g}s (env.unavailable_after) to create a "
                    f"session; tried {', '.join(self.urls)}. Last error: {problems[-1] if problems else '-'}"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _create_on(self, server: int, body: dict[str, Any], deadline: float, skip: set[int]) -> Any:
        """``POST /create`` to *server*, resent (same key) while the answer is lost and *deadline* allows."""
        delay = 0.05
        while True:
            try:
                resp = await self._attempt(server, "POST", "/create", body, None, idempotent=True, retry_500=False)
                return _decode(resp, self.urls[server], "POST /create")
            except _Retry as exc:
                if not exc.sent:  # never reached the server: nothing to dedupe, try the others
                    raise self._unavailable(server, "POST", "/create", 0, exc.cause) from None
                if not await self._dedupes_creates(server):
                    skip.add(server)
                    raise EnvUnavailable(
                        f"env server {self.urls[server]} did not answer POST /create ({exc.cause}); not resent "
                        "because that server does not dedupe creates (it does not report idempotent_create in "
                        "/health), so a second create could open a second session"
                    ) from None
                if time.monotonic() + delay > deadline:
                    raise self._unavailable(server, "POST", "/create", self.unavailable_after, exc.cause) from None
                log.info("resending POST /create to %s with the same idempotency key: %s", self.urls[server], exc.cause)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _dedupes_creates(self, server: int) -> bool:
        """Whether *server* honours ``idempotency_key`` on ``/create`` (asked once, from ``/health``)."""
        if self._dedupes[server] is None:
            try:
                health = await self._call(server, "GET", "/health", bound=0)
            except (EnvUnavailable, EnvRequestError):
                return False  # unknown for now: ask again next time
            self._dedupes[server] = isinstance(health, dict) and health.get("idempotent_create") is True
        return bool(self._dedupes[server])

    def _order(self) -> list[int]:
        """Servers by (recently failed, open sessions), rotating ties so creation spreads evenly."""
        self._turn += 1
        n = len(self.urls)
        now = time.monotonic()
        return sorted(range(n), key=lambda i: (now - self._failed_at[i] < 5.0, self._load[i], (i - self._turn) % n))

    async def reset(self, session: str, task_id: int) -> str:
        server, rid = self._parse(session)
        body = {"id": rid, "data_idx": int(task_id)}
        if self.batch:
            data = await self._batcher.submit(server, {"op": "reset", **body})
        else:
            data = await self._call(server, "POST", "/reset", body=body)
        return data["observation"] if isinstance(data, dict) else str(data)

    async def step(self, session: str, action: str, seq: int | None = None) -> tuple[str, float, bool, dict]:
        server, rid = self._parse(session)
        body: dict[str, Any] = {"id": rid, "action": action}
        if seq is not None:
            body["seq"] = int(seq)
        if seq is not None and self.batch:
            data = await self._batcher.submit(server, {"op": "step", **body})
        else:
            data = await self._call(server, "POST", "/step", body=body, idempotent=seq is not None)
        return str(data["observation"]), float(data["reward"]), bool(data["done"]), dict(data.get("info") or {})

    async def _send_chunk(self, server: int, ops: list[dict[str, Any]]) -> list[Any]:
        """Answers (or exceptions) for *ops*, in order: a single op alone (``/step``, ``/reset``), else ``/batch``."""
        url = self.urls[server]
        if len(ops) == 1:
            body = {k: v for k, v in ops[0].items() if k != "op"}
            return [await self._call(server, "POST", f"/{ops[0]['op']}", body=body)]
        data = await self._call(server, "POST", "/batch", body={"ops": ops})
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list) or len(results) != len(ops):
            raise EnvRequestError(f"env server {url} answered POST /batch with {len(results or [])} results for "
                                  f"{len(ops)} ops", status=200, url=url, endpoint="POST /batch", server_message="")
        outcomes: list[Any] = []
        for op, result in zip(ops, results):
            try:
                outcomes.append(_result(result["status"], result["body"], "", url, f"POST /{op['op']}"))
            except EnvRequestError as exc:
                outcomes.append(exc)
            except (KeyError, TypeError):
                outcomes.append(EnvRequestError(f"env server {url} sent a malformed batch result {result!r:.200}",
                                                status=200, url=url, endpoint="POST /batch", server_message=""))
        return outcomes

    async def observation(self, session: str) -> str:
        """The session's latest observation."""
        server, rid = self._parse(session)
        data = await self._call(server, "GET", "/observation", params={"id": rid})
        return data if isinstance(data, str) else str(data)

    async def close(self, session: str) -> None:
        server, rid = self._parse(session)
        if session in self._open:
            self._open.discard(session)
            self._load[server] -= 1
        try:
            await self._call(server, "POST", "/close", body={"id": rid}, bound=min(self.unavailable_after, 5.0))
        except EnvSessionNotFound:
            pass  # already closed or reaped: closing is idempotent
        except EnvUnavailable as exc:
            log.warning("could not close env session %s: %s", session, exc)

    async def info(self) -> dict[str, Any]:
        last: Exception | None = None
        for server in self._order():
            try:
                return await self._call(server, "GET", "/info", bound=min(self.unavailable_after, 5.0))
            except EnvUnavailable as exc:
                last = exc
        assert last is not None
        raise last

    async def tasks(self) -> dict[str, Any] | None:
        last: Exception | None = None
        for server in self._order():
            try:
                return await self._call(server, "GET", "/tasks", bound=min(self.unavailable_after, 5.0))
            except EnvSessionNotFound:  # 404: a server from before GET /tasks existed
                return None
            except EnvUnavailable as exc:
                last = exc
        assert last is not None
        raise last

    async def health(self) -> list[dict[str, Any] | None]:
        """``GET /health`` of every server (None where it does not answer)."""
        async def one(i: int) -> dict[str, Any] | None:
            try:
                return await self._call(i, "GET", "/health", bound=0)
            except EnvUnavailable:
                return None

        return list(await asyncio.gather(*(one(i) for i in range(len(self.urls)))))

    async def aclose(self) -> None:
        try:
            if self._open and self._client is not None and self._loop is asyncio.get_running_loop():
                await asyncio.wait_for(
                    asyncio.gather(*(self.close(s) for s in list(self._open)), return_exceptions=True), 5.0
                )
        except (asyncio.TimeoutError, RuntimeError):
            pass
        finally:
            if self._client is not None:
                try:
                    await self._client.aclose()
                except RuntimeError:  # its event loop is gone
                    pass
                self._client = None
            if self.on_close is not None:
                callback, self.on_close = self.on_close, None
                callback()


def _int(data: Any, key: str, url: str) -> int:
    if isinstance(data, dict) and isinstance(data.get(key), int):
        return data[key]
    raise EnvRequestError(f"env server {url} answered POST /create without an integer {key!r}: {data!r:.200}",
                          status=200, url=url, endpoint="POST /create", server_message=str(data)[:200])


def _decode(resp: httpx.Response, url: str, endpoint: str) -> Any:
    try:
        data = resp.json()
    except ValueError:
        data = _NOT_JSON
    return _result(resp.status_code, data, resp.text, url, endpoint)


def _result(status: int, data: Any, text: str, url: str, endpoint: str) -> Any:
    """The JSON *data* of a 2xx answer, else the matching :class:`EnvRequestError`."""
    if 200 <= status < 300:
        if data is _NOT_JSON:
            raise EnvRequestError(f"env server {url} answered {endpoint} with non-JSON: {text[:200]!r}",
                                  status=status, url=url, endpoint=endpoint, server_message=text[:200])
        return data
    message = data.get("error") if isinstance(data, dict) and "error" in data else text[:500]
    cls = {401: EnvAuthError, 404: EnvSessionNotFound, 429: EnvServerFull, 500: EnvRaised}.get(status, EnvRequestError)
    raise cls(f"env server {url} answered {status} to {endpoint}: {message}",
              status=status, url=url, endpoint=endpoint, server_message=str(message))

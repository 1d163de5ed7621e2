"""The env server: many sessions of one registered env behind an AgentGym-compatible JSON API.

Each session is one ``BaseEnv`` instance. Env code is blocking, so it runs in worker threads (as
many at once as pay off: :mod:`.workers`); a per-session lock serialises one session's calls while
other sessions proceed. A step that
carries ``seq`` is applied at most once: repeating the last ``seq`` returns the stored result;
likewise a create that carries ``idempotency_key`` opens at most one session per key.
The wire format is documented in docs/envs.md and served at ``GET /openapi.json``.
"""
from __future__ import annotations

import asyncio
import functools
import hmac
import itertools
import logging
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import taskids
from .base import BaseEnv
from .openapi import openapi_schema
from .sessions import Session, describe_env, has_wire_fields, list_tasks, reset_and_fields, step_and_fields, task_runs, \
    wire_fields
from .wire import HTTPError, batch_limit, check_step, describe_value, int_field, json_bytes, json_response, key_field, \
    parse_batch, read_body, read_raw, valid_text
from .workers import EnvCalls

log = logging.getLogger("agentgym.env.server")


@dataclass
class ServerSettings:
    """Limits of one server process (``agentgym env serve`` options)."""

    max_sessions: int = 1024
    #: Bearer token every request but ``/health`` and ``/openapi.json`` must carry (None: open).
    token: str | None = None
    #: Seconds a session may stay idle before it is closed (0: never).
    ttl: float = 600.0
    #: Largest accepted request body in bytes (413 above).
    max_body: int = 1 << 20
    #: Most threads running env code (one call per session at a time).
    workers: int = 64
    adapt_workers: bool = True  #: run as many at once as pay off (:mod:`.workers`); False: always ``workers``
    #: Most ops in one ``POST /batch`` (422 above, naming the cap); the client sends at most 256 (``batching.MAX_BATCH``).
    max_batch_ops: int = 256
    #: Largest ``POST /batch`` body in bytes (413 above; ``max_body`` too applies).
    max_batch_bytes: int = 1 << 20


class EnvServer:
    """The ASGI app (``.app``) serving sessions built by *factory* under the env name *name*."""

    def __init__(
        self,
        factory: Callable[[], BaseEnv],
        *,
        name: str,
        version: str | None = None,
        distribution: str | None = None,
        settings: ServerSettings | None = None,
    ) -> None:
        self.factory = factory
        self.name = name
        self.version = version
        self.distribution = distribution
        self.settings = settings or ServerSettings()
        self.sessions: dict[int, Session] = {}
        self._ids = itertools.count()
        self._creating = 0
        self._keyed: dict[str, int] = {}  # idempotency_key -> id of the open session it created
        self._building: dict[str, asyncio.Future] = {}  # idempotency_key -> the create still running
        self.calls = EnvCalls(self.settings.workers, self.settings.adapt_workers, name)
        self._token = self.settings.token.encode() if self.settings.token else None
        self._info: dict[str, Any] | None = None
        self._tasks: dict[str, Any] | None = None
        self._runs: list[tuple[int, int]] | None = None
        self._runs_building: asyncio.Future | None = None
        self.reaped = 0
        #: Sessions opened since the server started (load spread across servers shows in it).
        self.created = 0
        routes = [
            Route("/create", self._endpoint(self.create), methods=["POST"]),
            Route("/reset", self._endpoint(self.reset), methods=["POST"]),
            Route("/step", self._endpoint(self.step), methods=["POST"]),
            Route("/batch", self._endpoint(self.batch), methods=["POST"]),
            Route("/observation", self._endpoint(self.observation), methods=["GET"]),
            Route("/close", self._endpoint(self.close), methods=["POST"]),
            Route("/health", self._endpoint(self.health, auth=False), methods=["GET"]),
            Route("/info", self._endpoint(self.info), methods=["GET"]),
            Route("/tasks", self._endpoint(self.tasks), methods=["GET"]),
            Route("/openapi.json", self._endpoint(self.openapi, auth=False), methods=["GET"]),
        ]
        self.app = Starlette(
            routes=routes,
            lifespan=self._lifespan,
            exception_handlers={404: self._not_found, 405: self._not_allowed},
        )

    # -- plumbing ----------------------------------------------------------------------------
    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:  # env code, in its turn
        return await self.calls.run(functools.partial(fn, *args, **kwargs))

    async def _off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:  # parsing, encoding: in a thread at once
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def _endpoint(self, handler: Callable[[Request], Any], auth: bool = True) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                if auth and self._token is not None:
                    self._check_token(request)
                result = await handler(request)
                if isinstance(result, Response):
                    return result
                if isinstance(result, tuple):
                    return json_response(result[1], status=result[0])
                return json_response(result)
            except HTTPError as exc:
                headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
                if exc.status == 429:
                    headers = {"Retry-After": "1"}
                return json_response({"error": exc.message, **exc.extra}, exc.status, headers)
            except Exception as exc:  # a bug in the server itself: still answer in JSON
                log.exception("internal error on %s", request.url.path)
                return json_response({"error": f"internal server error: {type(exc).__name__}: {exc}"}, 500)

        return endpoint

    def _check_token(self, request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self._token or b""):
            raise HTTPError(401, "missing or wrong bearer token: send the header 'Authorization: Bearer <token>' "
                                 "with the token the server was started with (--token / env.token)")

    async def _not_found(self, request: Request, exc: Exception) -> Response:
        return json_response({"error": f"no endpoint {request.url.path}; see GET /openapi.json"}, 404)

    async def _not_allowed(self, request: Request, exc: Exception) -> Response:
        return json_response({"error": f"method {request.method} not allowed on {request.url.path}"}, 405,
                             headers=getattr(exc, "headers", None))  # starlette's Allow header (RFC 9110)

    async def _body(self, request: Request, *, required: bool = True) -> dict[str, Any]:
        return await read_body(request, self.settings.max_body, required=required)

    def _session(self, raw_id: Any, *, text: bool = False) -> Session:
        sid = int_field("id", raw_id, minimum=0, text=text)
        session = self.sessions.get(sid)
        if session is None:
            raise HTTPError(404, f"unknown session id {sid} on env server {self.name!r}: it was closed, reaped after "
                                 f"{self.settings.ttl:g}s idle, or never created; POST /create a new one")
        session.last_used = time.monotonic()
        return session

    # -- endpoints ---------------------------------------------------------------------------
    async def create(self, request: Request) -> dict[str, Any]:
        body = await self._body(request, required=False)  # AgentGym clients may send options; ignored
        key = key_field("idempotency_key", body)
        if key is not None:  # a resent create: the session it made, or the construction still running
            if key in self._keyed:
                session = self.sessions[self._keyed[key]]
                session.last_used = time.monotonic()
                return {"id": session.id, "observation": ""}
            if key in self._building:
                return await asyncio.shield(self._building[key])
        if len(self.sessions) + self._creating >= self.settings.max_sessions:
            raise HTTPError(429, f"env server {self.name!r} holds its maximum of {self.settings.max_sessions} "
                                 "sessions; close some, raise --max-sessions (env.max_sessions) or add servers")
        # a task of its own: the session is registered (and later reaped) even if this request is dropped
        task = asyncio.ensure_future(self._open_session(key))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved even with no one waiting
        if key is not None:
            self._building[key] = task
        return await asyncio.shield(task)

    async def _open_session(self, key: str | None) -> dict[str, Any]:
        self._creating += 1
        try:
            env = await self._run(self.factory)
        except Exception as exc:
            raise HTTPError(500, f"env {self.name!r} failed to construct: {type(exc).__name__}: {exc}") from None
        finally:
            self._creating -= 1
            if key is not None:
                self._building.pop(key, None)
        sid = next(self._ids)
        self.sessions[sid] = Session(sid, env, key)
        self.created += 1
        if key is not None:
            self._keyed[key] = sid
        # "observation" for AgentGym clients that read one at create (TextCraft's); empty until reset
        return {"id": sid, "observation": ""}

    def _forget(self, session: Session) -> None:
        """Drop *session* from the tables (it is closed or about to be)."""
        self.sessions.pop(session.id, None)
        if session.key is not None and self._keyed.get(session.key) == session.id:
            del self._keyed[session.key]

    async def reset(self, request: Request) -> Any:
        return await self.do_reset(await self._body(request))

    async def do_reset(self, body: dict[str, Any]) -> Any:
        session = self._session(body.get("id"))
        task_id = int_field("data_idx", body.get("data_idx"), minimum=0)
        seed = None if body.get("seed") is None else int_field("seed", body.get("seed"))
        runs = await self._task_runs(session.env)
        if not taskids.contains(runs, task_id):
            raise HTTPError(422, f"'data_idx' {task_id} is in no split of env {self.name!r}; its task ids are "
                                 f"{taskids.describe(runs)} (GET /tasks lists them)")
        async with session.lock:
            if self.sessions.get(session.id) is not session:
                raise HTTPError(404, f"session id {session.id} was closed while this reset waited")
            try:
                obs, extra = await self._run(reset_and_fields, session.env, task_id, seed)
            except Exception as exc:
                session.needs_reset = True
                return 500, {"error": f"env {self.name!r} raised in reset(task_id={task_id}): {type(exc).__name__}: {exc}",
                             "session": "open", "needs_reset": True}
            if not isinstance(obs, str):
                session.needs_reset = True
                return 500, {"error": f"env {self.name!r} reset() returned {type(obs).__name__}, expected str",
                             "session": "open", "needs_reset": True}
            session.last_seq, session.stored = 0, None
            session.observation, session.score, session.done, session.needs_reset = obs, 0.0, False, False
            session.last_used = time.monotonic()
        return {"id": session.id, "observation": obs, "reward": 0.0, "score": 0.0, "done": False, **(extra or {})}

    async def step(self, request: Request) -> Any:
        return await self.do_step(await self._body(request))

    async def do_step(self, body: dict[str, Any]) -> Any:
        session = self._session(body.get("id"))
        action = body.get("action")
        if not isinstance(action, str):
            raise HTTPError(422, f"'action' must be a string, got {describe_value(action)}")
        action = valid_text(action)
        seq = None if body.get("seq") is None else int_field("seq", body.get("seq"), minimum=1)
        async with session.lock:
            if self.sessions.get(session.id) is not session:
                raise HTTPError(404, f"session id {session.id} was closed while this step waited")
            if seq is not None and session.stored is not None and seq == session.last_seq:
                return session.stored  # a retried step: the stored result, not a second action
            if seq is not None and seq <= session.last_seq:
                raise HTTPError(409, f"step seq {seq} is older than the last applied step {session.last_seq} "
                                     "of this episode; only the last step's result is kept")
            if session.needs_reset:
                raise HTTPError(409, f"session {session.id} has no episode running (never reset, or the env raised); "
                                     "POST /reset first")
            result = await self._apply_step(session, action)
            if seq is not None:
                session.last_seq, session.stored = seq, result
            session.last_used = time.monotonic()
            return result

    async def _apply_step(self, session: Session, action: str) -> tuple[int, dict]:
        try:
            out, extra = await self._run(step_and_fields, session.env, action)
            obs, reward, done, info = out
            problem = check_step(obs, reward, done, info)
        except Exception as exc:
            problem = f"raised in step: {type(exc).__name__}: {exc}"
        if problem:
            session.needs_reset = True
            return 500, {"error": f"env {self.name!r} {problem}; the episode is over, POST /reset to start another",
                         "session": "open", "needs_reset": True}
        reward = float(reward)
        session.observation, session.done = obs, bool(done)
        session.score += reward
        return 200, {"observation": obs, "reward": reward, "score": session.score, "done": bool(done), "info": info,
                     **(extra or {})}

    async def batch(self, request: Request) -> Response:
        """Many step/reset ops (of different sessions) in one request; each gets its own status. Over
        ``max_batch_ops``: a 422 naming the cap; over ``max_batch_bytes``: a 413 naming it. Parsing and encoding run off the loop."""
        settings = self.settings
        raw = await read_raw(request, *batch_limit(settings.max_body, settings.max_batch_bytes), "send fewer ops")
        ops = await self._off_loop(parse_batch, raw, settings.max_batch_ops)
        first = next((self.sessions.get(op["id"]) for op in ops if op["op"] == "reset"), None)
        if first is not None and self._runs is None:  # known before the ops start: each reset then takes
            await self._task_runs(first.env)          # its session's lock in op order
        results: list[Any] = [None] * len(ops)
        todo = iter(enumerate(ops))
        async def run_ops() -> None:  # takes the next op, so its session's lock, in op order
            for index, op in todo:
                results[index] = await self._batch_op(op)

        # at most `workers` ops under way: starting 256 at once held the event loop for tens of ms
        await asyncio.gather(*(run_ops() for _ in range(min(len(ops), settings.workers))))
        data = await self._off_loop(json_bytes, {"results": results})
        return Response(data, media_type="application/json")

    async def _batch_op(self, op: Any) -> dict[str, Any]:
        try:
            result = await (self.do_step if op["op"] == "step" else self.do_reset)(op)
        except HTTPError as exc:
            return {"status": exc.status, "body": {"error": exc.message, **exc.extra}}
        if isinstance(result, tuple):
            return {"status": result[0], "body": result[1]}
        return {"status": 200, "body": result}

    async def observation(self, request: Request) -> Any:
        session = self._session(request.query_params.get("id"), text=True)
        if not has_wire_fields(session.env):
            return session.observation  # a bare JSON string, as the AgentGym servers answer
        async with session.lock:  # the env may be mid-step in another thread
            if self.sessions.get(session.id) is not session:
                raise HTTPError(404, f"session id {session.id} was closed while this request waited")
            try:
                fields = await self._run(wire_fields, session.env, "observation")
            except Exception as exc:
                raise HTTPError(500, f"env {self.name!r} raised in wire_fields('observation'): "
                                     f"{type(exc).__name__}: {exc}") from None
        return session.observation if fields is None else {"observation": session.observation, **fields}

    async def close(self, request: Request) -> dict[str, Any]:
        body = await self._body(request)
        session = self._session(body.get("id"))
        self._forget(session)
        async with session.lock:
            await self._close_env(session)
        return {"id": session.id, "closed": True}

    async def health(self, request: Request) -> dict[str, Any]:
        s = self.settings
        return {"status": "ok", "env": self.name, "sessions": len(self.sessions), "max_sessions": s.max_sessions,
                "idempotent_create": True, "created": self.created, "max_batch_ops": s.max_batch_ops,
                "max_batch_bytes": batch_limit(s.max_body, s.max_batch_bytes)[0], "env_calls_at_once": self.calls.limit}

    async def info(self, request: Request) -> dict[str, Any]:
        if self._info is None:
            self._info = await self._run(describe_env, self.factory, self.name, self.version, self.distribution)
        return {**self._info, "sessions": len(self.sessions), "max_sessions": self.settings.max_sessions}

    async def tasks(self, request: Request) -> dict[str, Any]:
        """Every split's task ids and their categories (:func:`~agentgym_core.env.spec.task_listing`)."""
        if self._tasks is None:
            self._tasks = await self._run(list_tasks, self.factory)
        return self._tasks

    async def openapi(self, request: Request) -> dict[str, Any]:
        return openapi_schema(self.name, self.version, data_idx=taskids.schema(await self._task_runs()),
                              max_batch_ops=self.settings.max_batch_ops)

    async def _task_runs(self, env: BaseEnv | None = None) -> list[tuple[int, int]]:
        """The ids of every split, as runs: asked once per server of *env* (a session's, so no env is
        built for it) or, for ``/openapi.json`` before any session, of a new instance. Concurrent
        first callers wait for that one answer."""
        if self._runs is None:
            if self._runs_building is None:
                self._runs_building = asyncio.ensure_future(self._run(task_runs, self.factory, env))
            try:
                self._runs = await asyncio.shield(self._runs_building)
            except Exception:
                self._runs_building = None  # the next request tries again
                raise
        return self._runs

    # -- lifecycle ---------------------------------------------------------------------------
    async def _close_env(self, session: Session) -> None:
        try:
            await self._run(session.env.close)
        except Exception:  # a failing close must not take the server down
            log.exception("env %r session %s raised in close()", self.name, session.id)

    async def _reap(self) -> None:
        ttl = self.settings.ttl
        while True:
            await asyncio.sleep(max(0.05, min(ttl / 4, 5.0)))
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if not session.lock.locked() and now - session.last_used > ttl:
                    self._forget(session)
                    self.reaped += 1
                    await self._close_env(session)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette):
        self.calls.open()
        reaper = asyncio.create_task(self._reap()) if self.settings.ttl > 0 else None
        try:
            yield
        finally:
            if reaper is not None:
                reaper.cancel()
            for session in list(self.sessions.values()):
                await self._close_env(session)
            self.sessions.clear()
            self._keyed.clear()
            self.calls.close()

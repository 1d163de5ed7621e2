"""The OpenAI-compatible policy endpoint: ``/v1/chat/completions`` and ``/v1/models`` over episodes.

Every request names its episode by its key: the API key (``Authorization: Bearer <key>``, what
``OpenAI(api_key=...)`` sends) or an ``X-AgentGym-Key`` header (for frameworks that insist on an
API key of their own). An unknown or missing key is a 401 in the OpenAI error format. The
episode serves the call (:class:`~agentgym_external.episode.PolicyEpisode`); concurrent calls of
many episodes meet in the run's generation batcher and go to the engine as batches.

Beside the OpenAI routes, ``POST /agentgym/env/step`` lets an agent that runs as a command (any
language) step its episode's env session with the same key, and ``GET /agentgym/task`` gives it
the task. :class:`PolicyServer` serves in a thread of its own, so an agent's blocking calls and
the rollout's event loop never wait on each other.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .episode import EpisodeClosed, PolicyEpisode
from .tools import RequestError
from .wire import error_body, read_request

log = logging.getLogger("agentgym.external")

KEY_HEADER = "x-agentgym-key"


def request_key(request: Request) -> str | None:
    """The episode key a request carries (the header wins over the API key)."""
    key = request.headers.get(KEY_HEADER)
    if key:
        return key.strip()
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _error(status: int, message: str, kind: str, param: str | None = None, code: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, kind, param, code), status_code=status)


class PolicyServer:
    """Serves episodes by key; see the module docstring.

    *resolve*, when given, is asked for a key the server does not know (``agentgym serve-policy``
    opens an episode per name under its one secret); it returns an episode or None (401).
    """

    def __init__(self, model_name: str = "agentgym-policy", *, host: str = "127.0.0.1", port: int = 0,
                 resolve: Callable[[str], PolicyEpisode | None] | None = None) -> None:
        self.model_name = model_name
        self.host, self.port = host, port
        self.resolve = resolve
        self.episodes: dict[str, PolicyEpisode] = {}
        self._lock = threading.Lock()
        self.url: str | None = None
        self._thread: Any = None
        self.app = Starlette(routes=[
            Route("/health", self.health, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/agentgym/task", self.task, methods=["GET"]),
            Route("/agentgym/env/step", self.env_step, methods=["POST"]),
            Route("/agentgym/episode/finish", self.finish_episode, methods=["POST"]),
        ])

    # -- episodes --------------------------------------------------------------------------
    def open(self, episode: PolicyEpisode) -> str:
        with self._lock:
            self.episodes[episode.key] = episode
        return episode.key

    def close(self, key: str) -> PolicyEpisode | None:
        """Stop serving *key*: later calls get a 401 and calls in flight get no reply."""
        with self._lock:
            episode = self.episodes.pop(key, None)
        if episode is not None:
            episode.closed = True
        return episode

    def _episode(self, request: Request) -> PolicyEpisode | JSONResponse:
        key = request_key(request)
        if not key:
            return _error(401, "no API key: send the episode's key as the API key (Authorization: Bearer <key>) "
                               f"or in the {KEY_HEADER} header", "invalid_request_error", code="invalid_api_key")
        with self._lock:
            episode = self.episodes.get(key)
        if episode is None and self.resolve is not None:
            episode = self.resolve(key)
        if episode is None:
            shown = key if len(key) <= 8 else f"{key[:4]}...{key[-4:]}"
            return _error(401, f"incorrect API key {shown!r}: it is no open episode's key (each episode gets its own "
                               "key, valid while the episode runs)", "invalid_request_error", code="invalid_api_key")
        return episode

    # -- routes ----------------------------------------------------------------------------
    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "episodes": len(self.episodes)})

    async def models(self, request: Request) -> Response:
        found = self._episode(request)
        if isinstance(found, JSONResponse):
            return found
        return JSONResponse({"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": 0, "owned_by": "agentgym"}]})

    async def chat_completions(self, request: Request) -> Response:
        found = self._episode(request)
        if isinstance(found, JSONResponse):
            return found
        episode = found
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError as exc:
            return _error(400, f"the body is not JSON: {exc}", "invalid_request_error")
        try:
            req = read_request(body)
            reply = await episode.complete(req)
        except RequestError as exc:
            return _error(400, str(exc), "invalid_request_error", exc.param, exc.code)
        except EpisodeClosed as exc:
            return _error(409, f"{exc}: no more calls are served for it", "invalid_request_error", code="episode_over")
        except Exception as exc:  # noqa: BLE001 - an engine failure: the rollout fails the run with it
            log.error("policy endpoint: generation failed: %s: %s", type(exc).__name__, exc)
            return _error(500, f"generation failed: {type(exc).__name__}: {exc}", "server_error")
        if req.stream:
            chunks = reply.chunks(self.model_name, req.logprobs, req.include_usage)
            return StreamingResponse(iter(chunks), media_type="text/event-stream")
        return JSONResponse(reply.completion(self.model_name, req.logprobs))

    async def task(self, request: Request) -> Response:
        found = self._episode(request)
        if isinstance(found, JSONResponse):
            return found
        task = getattr(found, "task", None)
        if task is None:
            return _error(404, "this episode has no task (a standalone endpoint)", "invalid_request_error")
        return JSONResponse(task.to_json())

    async def env_step(self, request: Request) -> Response:
        found = self._episode(request)
        if isinstance(found, JSONResponse):
            return found
        env = getattr(getattr(found, "task", None), "env", None)
        if env is None:
            return _error(404, "this episode has no env session", "invalid_request_error")
        try:
            body = json.loads(await request.body() or b"null")
            action = body["action"]
            if not isinstance(action, str):
                raise TypeError("action must be a string")
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, f'the body must be {{"action": "<text>"}} ({exc})', "invalid_request_error")
        try:
            result = await env.astep_anywhere(action)
        except Exception as exc:  # noqa: BLE001 - the episode's env failed or is over: the agent is told why
            return _error(409, f"{type(exc).__name__}: {exc}", "invalid_request_error", code="env_error")
        return JSONResponse(result.to_json())

    def finish(self, episode: PolicyEpisode, body: dict[str, Any]) -> dict[str, Any]:
        """End *episode* at its agent's request (``agentgym serve-policy``); a rollout ends its episodes itself."""
        raise RequestError("a rollout's episode ends when its agent returns; only `agentgym serve-policy` "
                           "episodes are finished by the agent")

    async def finish_episode(self, request: Request) -> Response:
        found = self._episode(request)
        if isinstance(found, JSONResponse):
            return found
        try:
            body = json.loads(await request.body() or b"{}")
            if not isinstance(body, dict):
                raise RequestError('the body must be a JSON object such as {"reward": 1.0}')
            return JSONResponse(self.finish(found, body))
        except ValueError as exc:  # RequestError, bad JSON, a reward that is not a number
            return _error(400, str(exc), "invalid_request_error")
        except Exception as exc:  # noqa: BLE001 - e.g. interpret() on a bad reward
            return _error(400, f"{type(exc).__name__}: {exc}", "invalid_request_error")

    # -- serving in a thread -----------------------------------------------------------------
    def start(self) -> str:
        """Serve in a background thread; returns the base URL (``http://host:port``)."""
        from agentgym_core import ServerThread

        self._thread = ServerThread(self, self.host, self.port)  # it serves any object with an ``app``
        self._thread.__enter__()
        self.url = self._thread.url
        return self.url

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.__exit__(None, None, None)
            self._thread = None


async def call_in(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    """Await *coro* on *loop* from whichever event loop is running (the endpoint's or the rollout's)."""
    if asyncio.get_running_loop() is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

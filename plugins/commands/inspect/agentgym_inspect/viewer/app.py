"""The run viewer: a Starlette app with a paginated JSON API and one static page (no build, no CDN).

API handlers are plain functions, so Starlette runs their file reads in worker threads.

The page asks for one page of episode summaries at a time and for one episode when it is
opened; the server answers from byte-offset indexes (:mod:`agentgym_inspect.runs`), so a step
with thousands of episodes costs one indexing pass and then a seek per episode.
"""
from __future__ import annotations

import ipaddress
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agentgym_core.evaluation import compare_rows
from ..runs import Run, RunDirError, parse_for_index, step_of
from .episode import episode_view, load_decoder, matches

STATIC = Path(__file__).parent / "static"
MAX_LIMIT = 200
SORTS = {
    "index": (lambda e: e.index, False),
    "score": (lambda e: (e.score, e.reward), True),
    "-score": (lambda e: (e.score, e.reward), False),
    "turns": (lambda e: e.turns, True),
}


def _label(key: str, step: int | None) -> str:
    """``step 12`` for training steps, ``eval before`` for the trainer's eval dumps."""
    if key.startswith("trajectories/") and step is not None:
        return f"step {step}"
    folder, _, stem = key.partition("/")
    return f"{folder} {stem.removesuffix('_trajectories')}"


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _int(request: Request, name: str, default: int, lo: int, hi: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"query parameter {name!r} must be an integer, got {raw!r}") from None
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"query parameter {name!r} must be in [{lo}, {hi if hi is not None else '∞'}], got {value}")
    return value


class Viewer:
    """Holds the run, its decoder and a small cache of search results."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run = Run(run_dir)
        self._decoder: Any = None
        self._decoder_loaded = False
        self._searches: OrderedDict[tuple[str, str, int], list[int]] = OrderedDict()
        self._lock = threading.Lock()

    def decoder(self) -> Any:
        if not self._decoder_loaded:
            self._decoder = load_decoder(self.run.tokenizer_dir())
            self._decoder_loaded = True
        return self._decoder

    # -- endpoints -------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def api_run(self, request: Request) -> Response:
        evals = self.run.eval_results()
        metrics = {row.get("step"): row for row in self.run.metrics()}
        files = []
        for key in self.run.trajectory_files():
            step = step_of(key)
            row = metrics.get(step, {}) if key.startswith("trajectories/") else {}
            files.append({
                "key": key,
                "step": step,
                "label": _label(key, step),
                "episodes": row.get("episodes"),
                "success_rate": row.get("success_rate"),
                "reward_mean": row.get("reward_mean"),
                "horizon": row.get("horizon"),
            })
        return JSONResponse({
            "name": self.run.name,
            "path": str(self.run.path),
            "config": self.run.config_text(),
            "files": files,
            "steps": len(metrics),
            "eval": evals,
            "eval_table": compare_rows(evals) if evals else None,
        })

    def api_episodes(self, request: Request) -> Response:
        try:
            key = self.run.trajectory_key(request.query_params.get("file", ""))
            offset = _int(request, "offset", 0, 0)
            limit = _int(request, "limit", 50, 1, MAX_LIMIT)
            status = request.query_params.get("filter", "all")
            sort = request.query_params.get("sort", "index")
            query = request.query_params.get("q", "").strip()
            if status not in ("all", "success", "failure"):
                raise ValueError(f"filter must be all, success or failure, got {status!r}")
            if sort not in SORTS:
                raise ValueError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
            idx = self.run.trajectory_index(key)
        except ValueError as exc:
            return _error(400, str(exc))
        except RunDirError as exc:
            return _error(404, str(exc))
        eps = idx.episodes
        if status != "all":
            want = status == "success"
            eps = [e for e in eps if e.success == want]
        if query:
            hits = set(self._search(key, idx, query))
            eps = [e for e in eps if e.index in hits]
        keyfn, reverse = SORTS[sort]
        if sort != "index":
            eps = sorted(eps, key=keyfn, reverse=reverse)
        page = eps[offset:offset + limit]
        return JSONResponse({
            "file": key,
            "total": len(eps),
            "all": len(idx.episodes),
            "offset": offset,
            "limit": limit,
            "items": [e.to_dict() for e in page],
        })

    def _search(self, key: str, idx: Any, query: str) -> list[int]:
        """Indices of episodes matching *query*; cached until the file grows."""
        cache_key = (key, query.lower(), idx.indexed_bytes)
        with self._lock:
            if cache_key in self._searches:
                self._searches.move_to_end(cache_key)
                return self._searches[cache_key]
        needle = query.lower().encode()
        plain = query.isascii() and all(c.isalnum() or c in " _-.:," for c in query)
        hits = []
        with open(idx.path, "rb") as f:
            for ep in idx.episodes:
                f.seek(ep.offset)
                raw = f.read(ep.length)
                if plain and needle not in raw.lower():
                    continue  # fast reject; JSON escapes cannot hide plain text
                if matches(parse_for_index(raw)[0], query):
                    hits.append(ep.index)
        with self._lock:
            self._searches[cache_key] = hits
            while len(self._searches) > 32:
                self._searches.popitem(last=False)
        return hits

    def api_episode(self, request: Request) -> Response:
        try:
            key = self.run.trajectory_key(request.query_params.get("file", ""))
            index = _int(request, "index", 0, 0)
            idx = self.run.trajectory_index(key)
            data = idx.read(index)
        except ValueError as exc:
            return _error(400, str(exc))
        except (RunDirError, IndexError) as exc:
            return _error(404, str(exc))
        view = episode_view(data, self.decoder())
        view.update({"file": key, "index": index, "count": len(idx.episodes)})
        return JSONResponse(view)


def _loopback_only(app: Any) -> Any:
    """ASGI wrapper refusing clients that are not on loopback (defence in depth)."""

    async def wrapped(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            client = scope.get("client")
            host = client[0] if client else "127.0.0.1"
            try:
                ok = ipaddress.ip_address(host).is_loopback
            except ValueError:
                ok = host in ("localhost", "testclient")
            if not ok:
                await JSONResponse({"error": "the viewer serves loopback clients only"}, status_code=403)(scope, receive, send)
                return
        await app(scope, receive, send)

    return wrapped


def create_app(run_dir: str | Path) -> Any:
    """The ASGI app serving run *run_dir* (raises :class:`RunDirError` if it does not exist)."""
    viewer = Viewer(run_dir)
    app = Starlette(routes=[
        Route("/", viewer.index),
        Route("/api/run", viewer.api_run),
        Route("/api/episodes", viewer.api_episodes),
        Route("/api/episode", viewer.api_episode),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ])
    app.state.viewer = viewer
    return _loopback_only(app)

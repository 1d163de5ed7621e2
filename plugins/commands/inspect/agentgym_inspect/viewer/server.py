"""Serving the viewer on loopback: in the foreground (the CLI) or in a thread (tests, notebooks)."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def _bind(port: int) -> socket.socket:
    from agentgym_core import AgentGymError

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise AgentGymError(f"cannot listen on {HOST}:{port} for the viewer ({exc}); pick another --port, or 0 for any free one") from None
    sock.listen(128)
    return sock


def _server(run_dir: str | Path, log_level: str) -> Any:
    import uvicorn

    from .app import create_app

    config = uvicorn.Config(create_app(run_dir), log_level=log_level, access_log=False, lifespan="off")
    return uvicorn.Server(config)


def serve(run_dir: str | Path, port: int = 8765, *, on_ready: Any = None, log_level: str = "warning") -> None:
    """Serve *run_dir* on ``127.0.0.1:port`` until interrupted; ``on_ready(url)`` runs once bound."""
    server = _server(run_dir, log_level)
    sock = _bind(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    if on_ready is not None:
        on_ready(url)
    server.run(sockets=[sock])


class BackgroundViewer:
    """The viewer in a daemon thread on a free loopback port: ``with BackgroundViewer(run) as url: ...``."""

    def __init__(self, run_dir: str | Path, port: int = 0) -> None:
        self._server = _server(run_dir, "warning")
        self._sock = _bind(port)
        self.url = f"http://{HOST}:{self._sock.getsockname()[1]}/"
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.url

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

"""Build an :class:`~agentgym_core.env.server.EnvServer` for a named env and run it with uvicorn.

:func:`run_server` is what ``agentgym env serve`` runs; :class:`ServerThread` serves in a
background thread of this process (tests, benchmarks, notebooks).
"""
from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import AgentGymError
from ..options import check_options
from .base import BaseEnv
from .server import EnvServer, ServerSettings


def resolve_env(name: str, manager: Any = None) -> tuple[type, str | None]:
    """The env class for *name* and its distribution.

    *name* is a registered env name, or an import string ``"package.module:Class"`` of a
    ``BaseEnv`` subclass (handy while writing a plugin, before it is installed).
    """
    cls, distribution, _ = _resolve(name, manager)
    return cls, distribution


def _resolve(name: str, manager: Any) -> tuple[type, str | None, type | None]:
    """The env class, its distribution and its config dataclass (what its options may be)."""
    from ..registry import config_from_signature

    if ":" in name:
        from ..registry import import_string

        cls = import_string(name)
        if not (isinstance(cls, type) and issubclass(cls, BaseEnv)):
            raise AgentGymError(f"{name!r} is not a subclass of agentgym_core.BaseEnv")
        return cls, None, getattr(cls, "Config", None) or config_from_signature(cls, "env_config")
    if manager is None:
        from ..plugins import get_plugin_manager

        manager = get_plugin_manager()
    entry = manager.registry("envs").get(name)
    return entry.load(), entry.distribution, entry.config_class()


def env_factory(name: str, options: dict[str, Any] | None = None, *,
                manager: Any = None) -> tuple[Callable[[], BaseEnv], str | None]:
    """A function building env *name* with *options*, and the env's distribution.

    The options are checked against the env's config dataclass as a run config's env
    section is (unknown keys with a "did you mean", wrong types), and one env is built
    right away, so that bad options fail here with a clear message, not in a session.
    """
    cls, distribution, config_cls = _resolve(name, manager)
    options = dict(options or {})
    check_options(f"env {name!r}", config_cls, options)
    factory = functools.partial(cls, **options)
    try:
        factory().close()
    except Exception as exc:
        raise AgentGymError(f"env {name!r} cannot be built with options {options}: {type(exc).__name__}: "
                            f"{str(exc).rstrip('.')}. Check the env section of the config (or --options)") from exc
    return factory, distribution


def build_env_server(name: str, options: dict[str, Any] | None = None, *, manager: Any = None,
                     settings: ServerSettings | None = None) -> EnvServer:
    """An :class:`EnvServer` for env *name* (see :func:`resolve_env`), constructing envs with *options*.

    One env is built right away so that bad options fail here, with a clear message.
    """
    from importlib import metadata

    factory, distribution = env_factory(name, options, manager=manager)
    version = None
    if distribution:
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            pass
    return EnvServer(factory, name=name, version=version, distribution=distribution, settings=settings)


def bind_socket(host: str = "127.0.0.1", port: int = 0):
    """A listening socket on *host*:*port* (port 0: a free one); returns ``(socket, url)``."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        fix = ("another process listens there: pick another --port, or --port 0 for a free one"
               if exc.errno == errno.EADDRINUSE else
               f"is {host!r} an address of this machine? (--host 127.0.0.1 serves this machine only)")
        raise AgentGymError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; {fix}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{bound}"


def _uvicorn_server(app: Any, log_level: str = "warning"):
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on",
                            timeout_keep_alive=75, timeout_graceful_shutdown=3)
    return uvicorn.Server(config)


def run_server(env_server: EnvServer, host: str = "127.0.0.1", port: int = 0, *,
               on_ready: Callable[[str], None] | None = None, parent_pid: int | None = None,
               log_level: str = "warning") -> None:
    """Serve *env_server* until SIGINT/SIGTERM (or until process *parent_pid* is gone)."""
    sock, url = bind_socket(host, port)
    server = _uvicorn_server(env_server.app, log_level)
    if parent_pid is not None:
        def watch() -> None:
            import os

            while not server.should_exit:
                if os.getppid() != parent_pid:
                    server.should_exit = True
                time.sleep(0.5)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if on_ready is not None:
        on_ready(url)
    server.run(sockets=[sock])


class ServerThread:
    """Runs an :class:`EnvServer` in a background thread (tests, benchmarks, notebooks)."""

    def __init__(self, env_server: EnvServer, host: str = "127.0.0.1", port: int = 0) -> None:
        self.env_server = env_server
        self.sock, self.url = bind_socket(host, port)
        self._server = _uvicorn_server(env_server.app)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "ServerThread":
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("env server thread failed to start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self.sock.close()

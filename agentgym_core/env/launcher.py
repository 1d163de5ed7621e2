"""Start env servers for a run and stop them when it ends, so users never start them by hand.

:class:`EnvLauncher` spawns K ``agentgym env serve`` processes on free loopback ports, waits
for ``/health``, and stops them (process groups, SIGTERM then SIGKILL) on exit, on errors,
on Ctrl-C and at interpreter exit; each server also exits by itself when its parent dies.
:func:`open_env_pool` turns a run config's ``env`` section into an :class:`EnvPool`.
"""
from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from typing import IO, Any

from ..config_schema import EnvCoreKeys
from .errors import EnvLaunchError
from .pool import EnvPool, LocalEnvPool

_READY = re.compile(rb"listening on (http://\S+)")
_LIVE: "weakref.WeakSet[EnvLauncher]" = weakref.WeakSet()


class EnvLauncher:
    """K server processes for env *name*; a (sync or async) context manager.

    ``with EnvLauncher("babyai", servers=4) as launcher: launcher.urls``
    """

    def __init__(
        self,
        name: str,
        *,
        servers: int = 1,
        options: dict[str, Any] | None = None,
        token: str | None = None,
        max_sessions: int = 1024,
        ttl: float = 600.0,
        host: str = "127.0.0.1",
        startup_timeout: float = 60.0,
        python: str | None = None,
    ) -> None:
        if servers < 1:
            raise ValueError(f"servers must be >= 1, got {servers}")
        self.name = name
        self.servers = servers
        self.options = dict(options or {})
        self.token = token
        self.max_sessions = max_sessions
        self.ttl = ttl
        self.host = host
        self.startup_timeout = startup_timeout
        self.python = python or sys.executable
        self.procs: list[subprocess.Popen] = []
        self.urls: list[str] = []
        self._logs: list[tuple[IO[bytes], IO[bytes]]] = []

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "agentgym_core.cli.main", "env", "serve", self.name,
               "--host", self.host, "--port", "0", "--max-sessions", str(self.max_sessions),
               "--ttl", str(self.ttl), "--exit-with-parent", str(os.getpid())]
        if self.options:
            cmd += ["--options", json.dumps(self.options)]
        return cmd

    def start(self) -> "EnvLauncher":
        """Spawn the servers and wait until every one answers ``/health``; stop them all on failure."""
        if self.procs:
            return self
        _LIVE.add(self)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("AGENTGYM_ENV_TOKEN", None)
        if self.token:
            env["AGENTGYM_ENV_TOKEN"] = self.token  # not on the command line, where `ps` shows it
        try:
            for _ in range(self.servers):
                out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
                self._logs.append((out, err))
                self.procs.append(subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                                   env=env, start_new_session=True))
            self.urls = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> list[str]:
        import httpx

        deadline = time.monotonic() + self.startup_timeout
        urls: list[str | None] = [None] * len(self.procs)
        healthy = [False] * len(self.procs)
        while not all(healthy):
            for i, proc in enumerate(self.procs):
                if healthy[i]:
                    continue
                if proc.poll() is not None:
                    raise EnvLaunchError(
                        f"env server {i} for {self.name!r} exited with code {proc.returncode} before it was healthy. "
                        f"Its stderr:\n{self._tail(i)}"
                    )
                if urls[i] is None:
                    out = self._logs[i][0]
                    out.seek(0)
                    match = _READY.search(out.read())
                    urls[i] = match.group(1).decode() if match else None
                if urls[i] is not None:
                    try:
                        healthy[i] = httpx.get(f"{urls[i]}/health", timeout=2.0).status_code == 200
                    except httpx.HTTPError:
                        pass
            if all(healthy):
                break
            if time.monotonic() > deadline:
                waiting = [str(i) for i, ok in enumerate(healthy) if not ok]
                raise EnvLaunchError(
                    f"env server(s) {', '.join(waiting)} for {self.name!r} not healthy after {self.startup_timeout:g}s. "
                    f"Stderr of server {waiting[0]}:\n{self._tail(int(waiting[0]))}"
                )
            time.sleep(0.05)
        return [u for u in urls if u is not None]

    def _tail(self, i: int, limit: int = 4000) -> str:
        err = self._logs[i][1]
        err.seek(0)
        text = err.read().decode(errors="replace").strip()
        return (text[-limit:] if text else "(empty)")

    def alive(self) -> list[bool]:
        return [p.poll() is None for p in self.procs]

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every server (SIGTERM to its process group, SIGKILL after *timeout*). Idempotent."""
        for proc in self.procs:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
            _signal_group(proc, signal.SIGKILL)  # anything the server itself started
        for out, err in self._logs:
            out.close()
            err.close()
        self._logs.clear()
        self.procs.clear()
        self.urls = []
        _LIVE.discard(self)

    def __enter__(self) -> "EnvLauncher":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> "EnvLauncher":
        import asyncio

        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@atexit.register
def _stop_all() -> None:
    for launcher in list(_LIVE):
        launcher.stop(timeout=2.0)


# -- from a run config ---------------------------------------------------------------------------
def split_env_config(env_cfg: Any, manager: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(core keys, options)`` of an ``env`` config section: what core reads, and the env's own keywords."""
    from omegaconf import DictConfig, OmegaConf

    data = OmegaConf.to_container(env_cfg, resolve=True) if isinstance(env_cfg, DictConfig) else dict(env_cfg)
    names = {f.name for f in dataclasses.fields(EnvCoreKeys)}
    core = dataclasses.asdict(EnvCoreKeys(**{k: v for k, v in data.items() if k in names}))
    return core, {k: v for k, v in data.items() if k not in names}


def open_env_pool(env_cfg: Any, manager: Any = None, local: bool = False) -> EnvPool:
    """The :class:`EnvPool` a run config's ``env`` section asks for.

    ``local=True``: envs in this process (tests, quick runs). Else the servers in ``env.urls``,
    or ``env.servers`` freshly launched ones, which ``await pool.aclose()`` stops.
    """
    core, options = split_env_config(env_cfg, manager)
    pool = _open_pool(core, options, manager, local)
    if core["latency_s"] > 0:
        from .latency import LatencyPool

        pool = LatencyPool(pool, core["latency_s"], core["latency_sigma"])
    return pool


def _open_pool(core: dict[str, Any], options: dict[str, Any], manager: Any, local: bool) -> EnvPool:
    name = core["name"]
    if local:
        from .host import resolve_env  # light start-up: the server stack loads only for envs in this process

        cls, distribution = resolve_env(name, manager)
        return LocalEnvPool(functools.partial(cls, **options), name=name, distribution=distribution)
    from .client import HTTPEnvPool  # light start-up: httpx and tenacity load only for env servers

    token = core["token"] or os.environ.get("AGENTGYM_ENV_TOKEN") or None
    client_args = {"token": token, "timeout": core["timeout"], "unavailable_after": core["unavailable_after"]}
    if core["urls"]:
        return HTTPEnvPool(core["urls"], **client_args)
    launcher = EnvLauncher(name, servers=core["servers"], options=options, token=token,
                           max_sessions=core["max_sessions"], ttl=core.get("ttl", 600.0)).start()
    return HTTPEnvPool(launcher.urls, on_close=launcher.stop, **client_args)

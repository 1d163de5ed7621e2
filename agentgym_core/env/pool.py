"""The async interface rollout uses to talk to environments, and its in-process implementation.

``EnvPool`` is what the agent/rollout code sees; :class:`LocalEnvPool` runs ``BaseEnv``
instances in this process (env calls go to a thread so they never block generation), and
the HTTP client (``agentgym_core.env.client``) implements the same methods against env
servers. A session id identifies one env instance for one episode at a time.
"""
from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .base import BaseEnv

if TYPE_CHECKING:
    from .spec import EnvSpec


class EnvPool:
    """Async access to many env sessions. Implementations: local (in-process) and HTTP."""

    async def create(self) -> str:
        """Open a session; return its id."""
        raise NotImplementedError

    async def reset(self, session: str, task_id: int) -> str:
        """Start task *task_id* in *session*; return the first observation."""
        raise NotImplementedError

    async def step(self, session: str, action: str, seq: int | None = None) -> tuple[str, float, bool, dict]:
        """Apply *action*. *seq* (1, 2, ... per episode) makes a retried step apply once."""
        raise NotImplementedError

    async def close(self, session: str) -> None:
        """Close *session* (idempotent)."""
        raise NotImplementedError

    async def info(self) -> dict[str, Any]:
        """The env's self-description (instruction, action format, split sizes): ``GET /info``."""
        raise NotImplementedError

    async def tasks(self) -> dict[str, Any] | None:
        """Every split's task ids and categories (``GET /tasks``); None when the server cannot list them."""
        raise NotImplementedError

    async def spec(self, name: str | None = None) -> "EnvSpec":
        """The typed description of the env behind this pool (the same for local envs and servers)."""
        from .spec import EnvSpec

        info = await self.info()
        return EnvSpec.from_wire(info, await self.tasks(), name=name or getattr(self, "name", None))

    async def aclose(self) -> None:
        """Release the pool itself (connections, processes)."""

    async def __aenter__(self) -> "EnvPool":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class LocalEnvPool(EnvPool):
    """Sessions are ``BaseEnv`` instances in this process; calls run in worker threads."""

    def __init__(self, factory: Callable[[], BaseEnv], name: str = "env", distribution: str | None = None) -> None:
        self.factory = factory
        self.name = name
        #: The installed distribution that provides the env (what an env server's /info reports too).
        self.distribution = distribution
        self._sessions: dict[str, BaseEnv] = {}
        self._ids = itertools.count()
        self._describer: BaseEnv | None = None

    async def create(self) -> str:
        env = await asyncio.to_thread(self.factory)
        sid = f"{self.name}-{next(self._ids)}"
        self._sessions[sid] = env
        return sid

    def _get(self, session: str) -> BaseEnv:
        try:
            return self._sessions[session]
        except KeyError:
            raise KeyError(f"unknown env session {session!r}") from None

    async def reset(self, session: str, task_id: int) -> str:
        env = self._get(session)
        return await asyncio.to_thread(lambda: env.reset(task_id=task_id))

    async def step(self, session: str, action: str, seq: int | None = None) -> tuple[str, float, bool, dict]:
        env = self._get(session)
        obs, reward, done, info = await asyncio.to_thread(env.step, action)
        return obs, float(reward), bool(done), dict(info)

    async def close(self, session: str) -> None:
        env = self._sessions.pop(session, None)
        if env is not None:
            await asyncio.to_thread(env.close)

    def describer(self) -> BaseEnv:
        if self._describer is None:
            self._describer = self.factory()
        return self._describer

    async def info(self) -> dict[str, Any]:
        version = None
        if self.distribution:
            from importlib import metadata

            try:
                version = metadata.version(self.distribution)
            except metadata.PackageNotFoundError:
                pass
        return {"name": self.name, "distribution": self.distribution, "version": version, **self.describer().describe()}

    async def tasks(self) -> dict[str, Any]:
        from .spec import task_listing

        return task_listing(self.describer())

    def splits(self) -> dict[str, Sequence[int]]:
        return self.describer().splits()

    async def aclose(self) -> None:
        for sid in list(self._sessions):
            await self.close(sid)
        if self._describer is not None:
            self._describer.close()
            self._describer = None

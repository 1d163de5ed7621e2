"""The env side of the env server: its sessions and the calls that run env code in a worker thread.

A :class:`Session` is one env instance with what exactly-once steps need; the functions here
call the env (reset, step, describe) together with its optional wire fields, in the one
worker-thread call the server makes for each request (:mod:`.server`).
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from . import taskids
from .base import BaseEnv


class Session:
    """One env instance, its lock and what exactly-once needs (the last applied step)."""

    __slots__ = ("id", "env", "key", "lock", "last_used", "last_seq", "stored", "observation", "score", "done",
                 "needs_reset")

    def __init__(self, sid: int, env: BaseEnv, key: str | None = None) -> None:
        self.id, self.env, self.key = sid, env, key
        self.lock = asyncio.Lock()
        self.last_used = time.monotonic()
        self.last_seq = 0
        self.stored: tuple[int, dict] | None = None
        self.observation = ""
        self.score = 0.0
        self.done = False
        self.needs_reset = True  # no episode until the first reset


def has_wire_fields(env: Any) -> bool:
    """Whether *env* overrides :meth:`BaseEnv.wire_fields` (others are served without asking it)."""
    method = getattr(type(env), "wire_fields", None)
    return method is not None and method is not BaseEnv.wire_fields


def wire_fields(env: Any, call: str) -> dict[str, Any] | None:
    """The env's extra answer fields for *call*, checked against the contract (see ``BaseEnv.wire_fields``)."""
    if not has_wire_fields(env):
        return None
    fields = env.wire_fields(call)
    if fields is None:
        return None
    if not isinstance(fields, dict) or not all(isinstance(key, str) for key in fields):
        raise TypeError(f"wire_fields({call!r}) returned {type(fields).__name__}; expected None or a dict with "
                        "string keys")
    clash = sorted(BaseEnv.WIRE_KEYS & fields.keys()) if call != "observation" else []
    if clash:
        raise ValueError(f"wire_fields({call!r}) may not replace the server's own field(s) {', '.join(clash)}; "
                         "give them other names")
    return fields


def reset_and_fields(env: Any, task_id: int, seed: int | None) -> tuple[Any, dict[str, Any] | None]:
    """``env.reset`` and then its reset answer fields, in one worker-thread call."""
    obs = env.reset(task_id=task_id, seed=seed)
    return obs, wire_fields(env, "reset")


def step_and_fields(env: Any, action: str) -> tuple[Any, dict[str, Any] | None]:
    """``env.step`` and then its step answer fields, in one worker-thread call."""
    out = env.step(action)
    return out, wire_fields(env, "step")


def describe_env(factory: Callable[[], BaseEnv], name: str, version: str | None,
                 distribution: str | None) -> dict[str, Any]:
    """What ``GET /info`` tells about the env: a new instance's ``describe()``, its name and
    distribution, and the number of tasks per category of each split (splits over 200,000 ids are
    not counted)."""
    env = factory()
    try:
        desc = env.describe()
        categories: dict[str, dict[str, int]] = {}
        for split, ids in env.splits().items():
            if len(ids) > 200_000:
                continue
            counts: dict[str, int] = {}
            for tid in ids:
                cat = env.category(tid)
                if cat is not None:
                    counts[cat] = counts.get(cat, 0) + 1
            if counts:
                categories[split] = counts
    finally:
        env.close()
    out = {"name": name, "version": version, "distribution": distribution, **desc}
    if categories:
        out["categories"] = categories
    return out


def list_tasks(factory: Callable[[], BaseEnv]) -> dict[str, Any]:
    """``GET /tasks``: a new instance's task ids and categories per split."""
    from .spec import task_listing

    env = factory()
    try:
        return task_listing(env)
    finally:
        env.close()


def task_runs(factory: Callable[[], BaseEnv], env: BaseEnv | None) -> list[tuple[int, int]]:
    """The ids of every split as runs, from *env* (a session's) or else from a new instance."""
    if env is not None:
        return taskids.id_runs(env.splits())
    env = factory()
    try:
        return taskids.id_runs(env.splits())
    finally:
        env.close()


"""Test helpers for plugin authors (also a pytest plugin, loaded automatically).

Fixtures:

* ``plugin_manager`` -- a fresh manager with only core's defaults (no entry points);
* ``register_plugin`` -- ``register_plugin(module_or_obj, name=...)`` adds an in-test plugin
  to that manager and removes it after the test.

And :func:`check_env`, which checks a :class:`~agentgym_core.BaseEnv` subclass against
the contract in DESIGN.md.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .env.base import BaseEnv


@pytest.fixture
def plugin_manager() -> Iterator[Any]:
    """A fresh plugin manager holding only core's internal plugin (no entry points)."""
    from .plugins import get_plugin_manager

    yield get_plugin_manager(entrypoints=False, fresh=True)


@pytest.fixture
def register_plugin(plugin_manager: Any) -> Iterator[Callable[..., Any]]:
    """Register an in-test plugin on ``plugin_manager``; it is unregistered after the test."""
    added: list[str] = []

    def register(plugin: Any, name: str | None = None, **kwargs: Any) -> Any:
        plugin_name = name or getattr(plugin, "__name__", None) or f"test-plugin-{len(added)}"
        plugin_manager.register(plugin, plugin_name, **kwargs)
        added.append(plugin_name)
        return plugin_manager

    yield register
    for name in added:
        plugin_manager.unregister(name)


class EnvContractError(AssertionError):
    """A BaseEnv subclass breaks the contract; the message says which rule."""


def check_env(
    env_cls: type[BaseEnv],
    *,
    options: dict[str, Any] | None = None,
    task_ids: tuple[int, ...] | None = None,
    actions: tuple[str, ...] = ("look", "noop", "invalid action $$$"),
) -> None:
    """Check *env_cls* against the BaseEnv contract; raise :class:`EnvContractError` if broken.

    * ``reset`` returns a string, and resetting the same task id twice gives the same
      observation (also after other tasks ran in between);
    * ``step`` returns ``(str, float, bool, dict)`` for arbitrary (even nonsensical) actions;
    * ``splits()`` maps split names to non-empty sequences of ints, ``instruction`` is text;
    * ``close`` is idempotent.
    """
    if not (isinstance(env_cls, type) and issubclass(env_cls, BaseEnv)):
        raise EnvContractError(f"{env_cls!r} is not a subclass of agentgym_core.BaseEnv")
    options = options or {}
    env = env_cls(**options)
    try:
        if not isinstance(env.instruction, str) or not env.instruction.strip():
            raise EnvContractError(f"{env_cls.__name__}.instruction must be non-empty text")
        if env.action_format not in ("react", "tags", "free"):
            raise EnvContractError(
                f"{env_cls.__name__}.action_format must be 'react', 'tags' or 'free', got {env.action_format!r}"
            )
        splits = env.splits()
        if not isinstance(splits, dict) or "train" not in splits:
            raise EnvContractError(f"{env_cls.__name__}.splits() must return a dict with a 'train' split")
        for split, ids in splits.items():
            if len(ids) == 0 or not all(isinstance(i, int) for i in list(ids[:3])):
                raise EnvContractError(f"split {split!r} of {env_cls.__name__} must be a non-empty sequence of ints")
        if task_ids is None:
            train = splits["train"]
            task_ids = (train[0], train[len(train) // 2])
        first: dict[int, str] = {}
        for tid in task_ids:
            obs = env.reset(task_id=tid)
            if not isinstance(obs, str):
                raise EnvContractError(f"reset(task_id={tid}) returned {type(obs).__name__}, expected str")
            first[tid] = obs
            for action in actions:
                result = env.step(action)
                _check_step(env_cls, action, result)
                if result[2]:
                    break
        for tid in reversed(task_ids):
            again = env.reset(task_id=tid)
            if again != first[tid]:
                raise EnvContractError(
                    f"reset(task_id={tid}) is not reproducible: first {first[tid][:80]!r}..., then {again[:80]!r}..."
                )
    finally:
        env.close()
    try:
        env.close()
    except Exception as exc:  # noqa: BLE001 - any exception breaks the contract
        raise EnvContractError(f"{env_cls.__name__}.close() is not idempotent: second call raised {exc!r}") from exc


def _check_step(env_cls: type, action: str, result: Any) -> None:
    if not (isinstance(result, tuple) and len(result) == 4):
        raise EnvContractError(f"step({action!r}) must return a 4-tuple, got {result!r:.200}")
    obs, reward, done, info = result
    if not isinstance(obs, str):
        raise EnvContractError(f"step({action!r}) observation is {type(obs).__name__}, expected str")
    if not isinstance(reward, (int, float)) or isinstance(reward, bool) or not math.isfinite(reward):
        raise EnvContractError(f"step({action!r}) reward must be a finite float, got {reward!r}")
    if not isinstance(done, bool):
        raise EnvContractError(f"step({action!r}) done must be a bool, got {type(done).__name__}")
    if not isinstance(info, dict):
        raise EnvContractError(f"step({action!r}) info must be a dict, got {type(info).__name__}")

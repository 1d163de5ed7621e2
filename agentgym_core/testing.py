"""Test helpers for plugin authors (also a pytest plugin, loaded automatically).

:func:`check_env` checks a :class:`~agentgym_core.BaseEnv` subclass against the contract in
``agentgym_core/env/base.py``, and :func:`play_over_http` plays one episode through a real
env server in the AgentGym wire format. Neither needs pytest, which core does not install.

Fixtures, defined only where pytest is installed (``pip install 'agentgym-core[testing]'``; a
plugin made by ``agentgym new plugin`` declares it as its ``test`` extra):

* ``plugin_manager`` -- a fresh manager with only core's defaults (no entry points);
* ``register_plugin`` -- ``register_plugin(module_or_obj, name=...)`` adds an in-test plugin
  to that manager and removes it after the test;
* ``force_cpu_bf16`` -- ``force_cpu_bf16(True | False)`` makes the test act as on a CPU with (or
  without) native bf16, whatever this one has (``AGENTGYM_CPU_BF16``).
"""
from __future__ import annotations

import contextlib
import importlib.util
import math
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .env.base import BaseEnv

try:
    import pytest
except ModuleNotFoundError as exc:
    if exc.name != "pytest":  # pytest is there but broken: say so rather than drop the fixtures
        raise
    pytest = None

if pytest is not None:

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

    @pytest.fixture
    def force_cpu_bf16(monkeypatch: Any) -> Callable[[bool], None]:
        """``force_cpu_bf16(True)``: this test (and the processes it starts) act as on a CPU with native
        bf16 (``dtype: auto`` is bf16, the trainer autocasts to bf16); ``False``: as on one without.
        Tests whose expectations depend on that decision pin it, or run both ways on any machine."""
        from .backend import CPU_BF16_ENV

        def force(native: bool) -> None:
            monkeypatch.setenv(CPU_BF16_ENV, "1" if native else "0")

        return force


def pytest_report_header(config: Any) -> str:
    """Say which numeric path a CPU run takes here, and how to take the other machine's."""
    from .backend import CPU_BF16_ENV, cpu_bf16_reason, cpu_supports_bf16

    state = "on" if cpu_supports_bf16() else "off"
    return (f"agentgym: CPU bf16 {state} ({cpu_bf16_reason()}); {CPU_BF16_ENV}=0 or 1 runs the path of the "
            "other kind of CPU")


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


@dataclass
class HTTPTranscript:
    """What :func:`play_over_http` saw: the server's answers, in order."""

    url: str
    info: dict[str, Any]
    reset: dict[str, Any]
    invalid: dict[str, Any] | None = None
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def first_observation(self) -> str:
        return self.reset["observation"]

    @property
    def last(self) -> dict[str, Any]:
        return self.steps[-1][1] if self.steps else self.reset

    @property
    def success(self) -> bool:
        return bool(self.last.get("done")) and bool((self.last.get("info") or {}).get("success"))


def play_over_http(
    server: str,
    task_id: int,
    actions: Iterable[str] | Callable[[str], str | None],
    *,
    options: dict[str, Any] | None = None,
    invalid_action: str | None = None,
    invalid_hint: str | None = None,
    expect_success: bool = True,
    max_steps: int = 100,
    token: str | None = None,
    timeout: float = 60.0,
) -> HTTPTranscript:
    """Play task *task_id* to its end through an env server, as a client of the wire format would.

    *server* is a URL, or an env name (or import string) to serve with ``agentgym env serve``
    (with *options*) for this call. Then: ``GET /info``, ``POST /create``, ``POST /reset``;
    if *invalid_action* is given, it is sent first and must come back ``invalid_action``, not
    done, with *invalid_hint* in its observation; then *actions* are stepped with ``seq``
    numbers (a list, or a policy called with the latest observation; None stops), until done.
    Finally ``GET /observation`` must equal the last observation and ``POST /close`` succeed.
    Raises ``AssertionError`` naming what broke; with *expect_success*, also if the episode
    did not end in success. Returns the :class:`HTTPTranscript` for further checks.
    """
    import httpx

    with contextlib.ExitStack() as stack:
        if server.startswith(("http://", "https://")):
            url = server
        else:
            from .env.launcher import EnvLauncher

            url = stack.enter_context(EnvLauncher(server, options=options, token=token)).urls[0]
        headers = {"authorization": f"Bearer {token}"} if token else {}
        http = stack.enter_context(httpx.Client(base_url=url, timeout=timeout, headers=headers))

        def call(method: str, path: str, **kwargs: Any) -> Any:
            reply = http.request(method, path, **kwargs)
            assert reply.status_code == 200, (
                f"{method} {path} {kwargs.get('json', '')} answered {reply.status_code}: {reply.text[:500]}")
            return reply.json()

        info = call("GET", "/info")
        sid = call("POST", "/create")["id"]
        try:
            script = HTTPTranscript(url, info, call("POST", "/reset", json={"id": sid, "data_idx": int(task_id)}))
            _play(script, lambda action, seq: call("POST", "/step", json={"id": sid, "action": action, "seq": seq}),
                  actions, invalid_action, invalid_hint, max_steps)
            latest = script.steps[-1][1] if script.steps else (script.invalid or script.reset)
            assert call("GET", "/observation", params={"id": sid}) == latest["observation"], (
                "GET /observation is not the latest observation")
        finally:  # also when a check failed: leave no session behind
            closed = http.post("/close", json={"id": sid})
        assert closed.status_code == 200, f"POST /close answered {closed.status_code}: {closed.text[:500]}"
    if expect_success:
        assert script.success, (f"task {task_id} did not end in success after {len(script.steps)} steps "
                                f"({[a for a, _ in script.steps]}); last answer: {script.last}")
    return script


def _play(script: HTTPTranscript, step: Callable[[str, int], dict[str, Any]],
          actions: Iterable[str] | Callable[[str], str | None], invalid_action: str | None,
          invalid_hint: str | None, max_steps: int) -> None:
    """The steps of :func:`play_over_http`, recorded into *script*."""
    seq = 0
    if invalid_action is not None:
        seq += 1
        script.invalid = bad = step(invalid_action, seq)
        assert (bad.get("info") or {}).get("invalid_action") is True and bad["done"] is False, (
            f"invalid action {invalid_action!r} should be answered with info.invalid_action and done false, got {bad}")
        assert invalid_hint is None or invalid_hint in bad["observation"], (
            f"the answer to invalid action {invalid_action!r} should say {invalid_hint!r}:\n{bad['observation']}")
    if callable(actions):
        policy = actions
    else:
        remaining = iter(actions)

        def policy(_observation: str) -> str | None:
            return next(remaining, None)
    observation = script.first_observation  # an invalid action leaves the episode as it was
    while len(script.steps) < max_steps and not script.last.get("done"):
        action = policy(observation)
        if action is None:
            break
        seq += 1
        answer = step(action, seq)
        script.steps.append((action, answer))
        observation = answer["observation"]


def load_script(path: str | Any, name: str) -> types.ModuleType:
    """Import the file at *path* (a ``bench/`` script, an example's module) as module *name*, for tests."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module



class ScriptedEngine:
    """An engine that answers from a script instead of a model, for tests of agents, envs and rollout.

    *replies* is a list of texts used in turn (the last one repeats) or a function of
    ``(prompt_text, call_number)``. Each reply is encoded with *tokenizer* and ends with
    *end_ids* (default: the tokenizer's EOS, ``<|im_end|>`` for ChatML models), with log-prob
    *logprob* per token, cut at the request's ``max_new_tokens`` (finish reason ``length``) as a real
    engine cuts it. Every prompt is kept in :attr:`prompts` (token ids).
    """

    shares_weights = False

    def __init__(self, tokenizer: Any, replies: Sequence[str] | Callable[[str, int], str] = ("done",), *,
                 end_ids: Sequence[int] | None = None, logprob: float = -1.0) -> None:
        self._tokenizer = tokenizer
        self.replies = replies
        eos = tokenizer.eos_token_id
        self.end_ids = list(end_ids) if end_ids is not None else ([eos] if isinstance(eos, int) else [])
        self.logprob = logprob
        self.prompts: list[list[int]] = []

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def generate(self, requests: list[Any]) -> list[Any]:
        from .engine import GenerationResult

        out = []
        for request in requests:
            self.prompts.append(list(request.prompt_ids))
            n = len(self.prompts)
            if callable(self.replies):
                text = self.replies(self._tokenizer.decode(request.prompt_ids), n)
            else:
                text = self.replies[min(n, len(self.replies)) - 1]
            ids = self._tokenizer.encode(text, add_special_tokens=False) + self.end_ids
            limit = request.params.max_new_tokens  # as a real engine: never more than asked for
            finish = "stop" if len(ids) <= limit else "length"
            ids = ids[:limit]
            out.append(GenerationResult(ids, [self.logprob] * len(ids), finish, len(request.prompt_ids)))
        return out

    def update_weights(self, source: Any) -> None:
        pass

    def release(self, cache_key: str) -> None:
        pass

    def close(self) -> None:
        pass

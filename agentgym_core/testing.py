"""Test helpers for plugin authors (also a pytest plugin, loaded automatically).

:func:`check_env` checks a :class:`~agentgym_core.BaseEnv` subclass against the contract in
``agentgym_core/env/base.py``, :func:`check_component_options` any component against the rule
that its options are declared once, in its ``Config``, and :func:`play_over_http` (from
:mod:`.testing_http`) plays one episode through a real env server in the AgentGym wire format.
None needs pytest, which core does not install.

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
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .engine import Engine, GenerationResult
from .env.base import BaseEnv
# One episode through a real env server (the wire format), re-exported: the kit's public names are here.
from .testing_http import HTTPTranscript, play_over_http  # noqa: F401

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


class ComponentOptionsError(EnvContractError):
    """A component does not declare its options once, in its ``Config``; the message says how to fix it."""


#: Constructor parameters a kind's contract puts before a component's options (they come from other
#: config sections): an engine's model and the ``model`` section's keys, a trainer's run config,
#: plugin manager and resume directory. Any other named parameter of ``__init__`` restates an option.
KIND_PARAMETERS: dict[str, tuple[str, ...]] = {
    "engines": ("model", "tokenizer", "dtype", "chat_template", "max_context", "own_weights"),
    "trainers": ("config", "manager", "resume"),
}

_UNKNOWN_OPTION = "no_such_option_for_the_check"


def check_component_options(cls: type, kind: str | None = None, *, required: dict[str, Any] | None = None) -> None:
    """Check that component class *cls* declares its options once, in its ``Config`` dataclass.

    Raise :class:`ComponentOptionsError` unless: ``Config`` is a dataclass that builds with no
    options (or only *required*, the options the component cannot do without); ``__init__``
    takes them as ``**options`` and names no option itself (only ``self``, an optional ``config``
    and the parameters :data:`KIND_PARAMETERS` gives *kind*, a registry kind such as ``"engines"``);
    and an unknown option is refused with an error naming it. A class without ``Config`` passes:
    its options are its ``__init__``'s keywords. Only the last rule builds the component, and it
    fails before the component does any work when ``__init__`` starts with
    ``self.config = config_from(self, options)``.
    """
    import dataclasses
    import inspect

    name = cls.__name__
    config_cls = getattr(cls, "Config", None)
    if config_cls is None:
        return
    fix = (f"Declare each option once, as a field of {name}.Config (its default there, its checks in "
           f"__post_init__), and write `def __init__(self, **options)` starting with "
           "`self.config = config_from(self, options)` (from agentgym_core.options import config_from); "
           "see docs/plugins.md, 'Options'.")
    if not dataclasses.is_dataclass(config_cls):
        raise ComponentOptionsError(f"{name}.Config must be a dataclass, got {config_cls!r}. {fix}")
    required = dict(required or {})
    fields = [f.name for f in dataclasses.fields(config_cls)]
    try:
        config_cls(**required)
    except Exception as exc:  # noqa: BLE001 - whatever it raised, the defaults do not build
        given = f" with only {sorted(required)}" if required else " with no options"
        raise ComponentOptionsError(f"{name}.Config cannot be built{given}: {type(exc).__name__}: {exc}. "
                                    f"Give every option a default in {name}.Config.") from exc
    allowed = {"self", "config", *KIND_PARAMETERS.get(kind or "", ())}
    params = list(inspect.signature(cls.__init__).parameters.values())
    for p in params:
        if p.kind is p.VAR_KEYWORD or p.name in allowed:
            continue
        what = "restates the option" if p.name in fields else "declares"
        default = f" = {p.default!r}" if p.default is not p.empty else ""
        star = "*" if p.kind is p.VAR_POSITIONAL else ""
        raise ComponentOptionsError(f"{name}.__init__ {what} {star}{p.name}{default}, which is not its "
                                    f"**options. {fix}")
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        raise ComponentOptionsError(f"{name}.__init__ does not take **options, so it cannot take its Config's "
                                    f"fields ({', '.join(fields) or 'none'}) by name. {fix}")
    positional = [None for p in params[1:] if p.name in allowed and p.default is p.empty
                  and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        instance = cls(*positional, **required, **{_UNKNOWN_OPTION: 1})
    except Exception as exc:  # noqa: BLE001 - any error will do, if it names the option
        if _UNKNOWN_OPTION not in str(exc):
            raise ComponentOptionsError(f"{name}({_UNKNOWN_OPTION}=1) raised {type(exc).__name__}: {exc}, which does "
                                        f"not name the unknown option. {fix}") from exc
        return
    with contextlib.suppress(Exception):
        instance.close()
    raise ComponentOptionsError(f"{name} accepted the unknown option {_UNKNOWN_OPTION!r}: a misspelt option "
                                f"would be silently ignored. {fix}")


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
    * ``close`` is idempotent;
    * with a ``Config``, options are declared once, there (:func:`check_component_options`): the
      env builds with no options and with every option given by name at its default.
    """
    if not (isinstance(env_cls, type) and issubclass(env_cls, BaseEnv)):
        raise EnvContractError(f"{env_cls!r} is not a subclass of agentgym_core.BaseEnv")
    check_component_options(env_cls, "envs")
    if env_cls.Config is not None:
        import dataclasses

        defaults = dataclasses.asdict(env_cls.Config())
        for given in ({}, defaults):
            try:
                env_cls(**given).close()
            except Exception as exc:  # noqa: BLE001 - whatever it raised, the defaults do not build the env
                how = "every option given at its default" if given else "no options"
                raise ComponentOptionsError(f"{env_cls.__name__} cannot be built with {how}: "
                                            f"{type(exc).__name__}: {exc}") from exc
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


def load_script(path: str | Any, name: str) -> types.ModuleType:
    """Import the file at *path* (a ``bench/`` script, an example's module) as module *name*, for tests."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module



class ScriptedEngine(Engine):
    """An engine that answers from a script instead of a model, for tests of agents, envs and rollout.

    *replies* is a list of texts used in turn (the last one repeats) or a function of
    ``(prompt_text, call_number)``. Each reply is encoded with *tokenizer* and ends with
    *end_ids* (default: the tokenizer's EOS, ``<|im_end|>`` for ChatML models), with log-prob
    *logprob* per token, cut at the request's ``max_new_tokens`` (finish reason ``length``) as a real
    engine cuts it. Every prompt is kept in :attr:`prompts` (token ids).
    """

    shares_weights = False
    placement = "self"  # no device: nothing to place

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

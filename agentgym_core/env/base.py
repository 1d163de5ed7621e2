"""``BaseEnv``: what a third-party environment implements. Keep this contract stable.

An env is a text game: ``reset`` gives the first observation, ``step`` takes the agent's
action string and returns ``(observation, reward, done, info)``. It also describes itself
for the agent (instruction text, action format) and for training (task splits).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar


class BaseEnv:
    """Base class of every environment.

    Subclasses implement :meth:`reset`, :meth:`step` and usually :meth:`close`, and set
    :attr:`instruction` and :attr:`action_format`. Options from the run config's ``env``
    section (validated against the optional ``Config`` dataclass) arrive as keyword
    arguments of ``__init__``.

    Conventions for ``info`` returned by ``step``: ``"success": bool`` when the episode
    ended (used by the ``success`` reward); ``"invalid_action": True`` when the action could
    not be applied (the observation should then say why and what is allowed).

    Optional: :meth:`wire_fields` adds env-specific fields to the env server's JSON answers
    (e.g. to speak another server's dialect exactly); envs that do not override it are served
    with the standard answers of docs/envs.md.
    """

    #: What the task is, which actions exist and the expected action format. Shown to the
    #: agent as the first (system/user) message.
    instruction: ClassVar[str] = ""
    #: How actions are written: ``"react"`` (``Thought: ... Action: ...``), ``"tags"``
    #: (``<tag>...</tag>``, e.g. ``<search>``/``<answer>``) or ``"free"`` (the whole reply).
    action_format: ClassVar[str] = "react"
    #: Optional dataclass describing the keyword options ``__init__`` accepts.
    Config: ClassVar[type | None] = None

    def __new__(cls, *args: Any, **options: Any) -> "BaseEnv":
        env = super().__new__(cls)
        #: The keyword options this instance was built with, as a run config's ``env`` section
        #: would give them (``LLMAgent.train(BabyAIEnv(levels=[...]))`` trains in that setup).
        #: None when it was built with positional arguments, which a config cannot express.
        env.built_with = None if args else dict(options)
        return env

    def __init__(self, **options: Any) -> None:
        self.options = options

    # -- the episode -------------------------------------------------------------------------
    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        """Start task *task_id* (an index into :meth:`splits`) and return the first observation.

        The same ``task_id`` must give the same episode (reproducible), whatever happened before.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        """Apply *action*; return ``(observation, reward, done, info)``.

        An action the env cannot parse or apply is not an error: return an observation that
        says what went wrong and what is allowed, reward 0, and ``info["invalid_action"]=True``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    def close(self) -> None:
        """Release resources. Must be idempotent (a second call does nothing)."""

    # -- the wire (optional) ----------------------------------------------------------------
    #: Keys of the server's own ``/reset`` and ``/step`` answers, which :meth:`wire_fields`
    #: may not replace.
    WIRE_KEYS: ClassVar[frozenset[str]] = frozenset({"id", "observation", "reward", "score", "done", "info"})

    def wire_fields(self, call: str) -> dict[str, Any] | None:
        """Extra JSON fields for the env server's answer to *call*; None (the default): none.

        *call* is ``"reset"`` or ``"step"`` (asked right after that call returned) or
        ``"observation"`` (``GET /observation``). For reset and step the fields are added to the
        server's answer and may not reuse its keys (:attr:`WIRE_KEYS`). For observation, None
        keeps the standard answer (the latest observation as a bare JSON string) and a dict
        turns it into an object, ``{"observation": <latest observation>, **fields}``, in which
        the env may also give its own ``"observation"``. The server calls it in the session's
        thread under the session's lock, only if the env overrides it; values must be JSON-able.
        Used by compatibility modes that must answer like another server (AgentGym's
        ``task_description``, ``deleted``, ...).
        """
        return None

    # -- self-description -------------------------------------------------------------------
    def splits(self) -> dict[str, Sequence[int]]:
        """Task ids per split, e.g. ``{"train": range(0, 900), "test": range(900, 1000)}``.

        Rollout draws training tasks from ``"train"`` and evaluation from ``"test"``. The
        default treats every id as a seed: 10,000 training ids and 500 held-out ones.
        """
        return {"train": range(0, 10_000), "test": range(10_000, 10_500)}

    def category(self, task_id: int) -> str | None:
        """The category of *task_id* for per-category evaluation (a level, a task type), or None."""
        return None

    def describe(self) -> dict[str, Any]:
        """JSON-able self-description served at ``GET /info``."""
        splits = self.splits()
        return {
            "instruction": self.instruction,
            "action_format": self.action_format,
            "splits": {name: len(ids) for name, ids in splits.items()},
            "split_ranges": {name: _range_or_none(ids) for name, ids in splits.items()},
        }

    def __enter__(self) -> "BaseEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _range_or_none(ids: Sequence[int]) -> list[int] | None:
    if isinstance(ids, range) and ids.step == 1:
        return [ids.start, ids.stop]
    return None

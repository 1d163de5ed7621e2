"""``EnvSpec``: what an env says about itself, typed: instruction, action format, task ids per split, categories.

One description for local envs and env servers alike. Task ids are the env's own sequences
(a ``range`` stays a range, anything else becomes a tuple): nobody re-derives a split from its
size, so "which tasks are held out" cannot be right in one caller and wrong in another.

On the wire, ``GET /info`` carries the instruction and format and ``GET /tasks`` the ids
(:func:`task_listing`); a local env is described by an instance (:meth:`EnvSpec.from_env`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentGymError

#: Splits larger than this are not scanned for categories (a category() call per id).
CATEGORY_SCAN_LIMIT = 200_000


@dataclass(frozen=True)
class EnvSpec:
    name: str
    instruction: str
    #: ``react``, ``tags`` or ``free``: the format the env's instruction asks for.
    action_format: str
    #: Task ids per split, exactly as the env lists them.
    splits: Mapping[str, Sequence[int]]
    #: Category of each task id that has one (ids of splits over CATEGORY_SCAN_LIMIT are not scanned).
    categories: Mapping[int, str] = field(default_factory=dict)
    #: The installed distribution that provides the env and its version (None: unknown).
    distribution: str | None = None
    version: str | None = None
    #: The rest of the env's self-description (``GET /info``): levels, corpus, ...
    extra: Mapping[str, Any] = field(default_factory=dict)

    # -- queries -----------------------------------------------------------------------------
    def ids(self, split: str) -> Sequence[int]:
        """The task ids of *split*; an unknown split names the ones there are."""
        try:
            return self.splits[split]
        except KeyError:
            raise AgentGymError(f"env {self.name!r} has no split {split!r}; it has: {', '.join(self.splits) or 'none'}"
                                ) from None

    def category(self, task_id: int) -> str | None:
        return self.categories.get(int(task_id))

    def categories_of(self, task_ids: Sequence[int]) -> dict[int, str | None] | None:
        """``{task id: category}`` for *task_ids*, or None when the env has no categories at all."""
        if not self.categories:
            return None
        return {int(t): self.categories.get(int(t)) for t in task_ids}

    def split_of(self, task_id: int) -> str | None:
        """The first split holding *task_id* (None: no split does)."""
        return next((name for name, ids in self.splits.items() if task_id in ids), None)

    def check_task(self, task_id: int) -> None:
        """Refuse a task id that is in no split, with the splits' extents."""
        if self.split_of(task_id) is None:
            shown = "; ".join(f"{name}: {_extent(ids)}" for name, ids in self.splits.items())
            raise AgentGymError(f"task id {task_id} is in no split of env {self.name!r} ({shown}); pick one of those ids")

    @property
    def plugin(self) -> str | None:
        """``"agentgym-env-babyai 0.1.0"``: which installed plugin played (None when unknown)."""
        if not self.distribution:
            return None
        return " ".join(str(x) for x in (self.distribution, self.version) if x)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_env(cls, env: Any, *, name: str, distribution: str | None = None, version: str | None = None) -> "EnvSpec":
        """Describe a live ``BaseEnv`` instance (its ``describe()``, ``splits()`` and ``category()``)."""
        desc = dict(env.describe())
        splits = {k: _ids(v) for k, v in env.splits().items()}
        return cls._build(name, desc, splits, _scan_categories(env, splits), distribution, version)

    @classmethod
    def from_wire(cls, info: Mapping[str, Any], tasks: Mapping[str, Any] | None, *, name: str | None = None) -> "EnvSpec":
        """From an env server's ``GET /info`` and ``GET /tasks`` answers.

        A server without ``/tasks`` (an older AgentGym version) still describes splits that are
        ranges in ``/info``'s ``split_ranges``; any other split is an error saying what to do.
        """
        label = name or str(info.get("name") or "env")
        if tasks is not None:
            splits = {k: _from_wire_ids(v) for k, v in (tasks.get("splits") or {}).items()}
            categories: dict[int, str] = {}
            for split, cats in (tasks.get("categories") or {}).items():
                for tid, cat in zip(splits.get(split, ()), cats):
                    if cat is not None:
                        categories[int(tid)] = str(cat)
        else:
            ranges = info.get("split_ranges") or {}
            missing = [k for k in (info.get("splits") or {}) if not ranges.get(k)]
            if missing:
                raise AgentGymError(
                    f"env server for {label!r} does not list the task ids of split(s) {', '.join(missing)} (it has no "
                    "GET /tasks: an older AgentGym version); upgrade agentgym-core on the server, or run the env here "
                    "(--local / trainer.local_envs)")
            splits = {k: range(*r) for k, r in ranges.items()}
            categories = {}
        return cls._build(label, dict(info), splits, categories, info.get("distribution"), info.get("version"))

    @classmethod
    def _build(cls, name: str, desc: dict[str, Any], splits: dict[str, Sequence[int]], categories: dict[int, str],
               distribution: str | None, version: str | None) -> "EnvSpec":
        known = {"name", "instruction", "action_format", "splits", "split_ranges", "categories", "distribution",
                 "version", "sessions", "max_sessions"}
        return cls(name=name, instruction=str(desc.get("instruction") or ""),
                   action_format=str(desc.get("action_format") or "react"), splits=splits, categories=categories,
                   distribution=distribution, version=version,
                   extra={k: v for k, v in desc.items() if k not in known})


def task_listing(env: Any) -> dict[str, Any]:
    """The ``GET /tasks`` answer for a ``BaseEnv`` instance: every split's ids and their categories.

    ``{"splits": {"train": [0, 2, ...], "test": {"range": [900, 1000, 1]}}, "categories": {"test": ["GoTo", ...]}}``:
    a split that is a ``range`` is sent as its bounds; categories are aligned with the ids and
    given only for splits where some id has one.
    """
    splits = {k: _ids(v) for k, v in env.splits().items()}
    categories = _scan_categories(env, splits)
    out: dict[str, Any] = {"splits": {k: _to_wire_ids(v) for k, v in splits.items()}, "categories": {}}
    for split, ids in splits.items():
        if len(ids) <= CATEGORY_SCAN_LIMIT and any(int(t) in categories for t in ids):
            out["categories"][split] = [categories.get(int(t)) for t in ids]
    return out


def _ids(ids: Sequence[int]) -> Sequence[int]:
    return ids if isinstance(ids, range) else tuple(int(t) for t in ids)


def _to_wire_ids(ids: Sequence[int]) -> Any:
    return {"range": [ids.start, ids.stop, ids.step]} if isinstance(ids, range) else list(ids)


def _from_wire_ids(value: Any) -> Sequence[int]:
    if isinstance(value, Mapping) and "range" in value:
        return range(*value["range"])
    return tuple(int(t) for t in value)


def _scan_categories(env: Any, splits: Mapping[str, Sequence[int]]) -> dict[int, str]:
    out: dict[int, str] = {}
    for ids in splits.values():
        if len(ids) > CATEGORY_SCAN_LIMIT:
            continue
        for tid in ids:
            cat = env.category(int(tid))
            if cat is not None:
                out[int(tid)] = str(cat)
    return out


def _extent(ids: Sequence[int]) -> str:
    if isinstance(ids, range) and ids.step == 1:
        return f"{ids.start}-{ids.stop - 1}" if len(ids) else "empty"
    if not ids:
        return "empty"
    return f"{len(ids)} ids from {min(ids)} to {max(ids)}"

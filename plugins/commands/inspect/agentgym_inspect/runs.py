"""Browsing a run's episodes: trajectory files indexed by byte offset, episodes read lazily.

Trajectory files (``trajectories/step_000001.jsonl``, one ``Trajectory.to_dict()`` a line)
can hold thousands of long episodes, so they are indexed once by byte offset, with a small
summary per episode, and single episodes are read lazily by seeking. An index grows
incrementally when the trainer appends to a file. Everything else about a run directory
(layout, config, metrics, checkpoints, evaluations) is core's :mod:`agentgym_core.rundir`.
"""
from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym_core.rundir import RunDir, RunDirError, is_run_dir, load_summary, step_of

__all__ = ["EpisodeSummary", "Run", "RunDirError", "TrajectoryIndex", "is_run_dir", "load_summary", "step_of"]


@dataclass
class EpisodeSummary:
    """What the episode list shows, kept in memory per episode (no token ids, no text)."""

    index: int
    offset: int
    length: int
    episode_id: str
    task_id: Any
    group_id: Any
    success: bool
    score: float
    reward: float
    end_reason: str
    turns: int
    max_turns: int
    tokens: int
    generated: int
    failed: bool

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        del d["offset"], d["length"]
        return d


#: The flat numeric arrays of a trajectory line; the index only needs their length and sum.
_ARRAYS = re.compile(rb'"(token_ids|loss_mask|logprobs)": ?\[([-0-9.eE, ]*)\]')


def parse_for_index(line: bytes) -> tuple[dict[str, Any], int | None, int | None]:
    """``(data without the token arrays, token count, generated count)`` of one JSONL line.

    Cutting the long number lists out before ``json.loads`` makes indexing ~2.5x faster; a
    line that does not look as expected is simply parsed whole (counts ``None``).
    """
    bodies: dict[bytes, bytes] = {}

    def cut(m: re.Match) -> bytes:
        bodies[m.group(1)] = m.group(2)
        return b'"' + m.group(1) + b'": []'

    data = json.loads(_ARRAYS.sub(cut, line, count=3))
    ids, mask = bodies.get(b"token_ids"), bodies.get(b"loss_mask")
    if ids is None or mask is None:
        return json.loads(line) if bodies else data, None, None
    tokens = ids.count(b",") + 1 if ids.strip() else 0
    generated = mask.count(b"1") if b"." not in mask else int(sum(float(x) for x in mask.split(b",") if x.strip()))
    return data, tokens, generated


def summarize_episode(index: int, offset: int, length: int, data: dict[str, Any],
                      tokens: int | None = None, generated: int | None = None) -> EpisodeSummary:
    rewards = data.get("rewards") or []
    mask = data.get("loss_mask") or []
    return EpisodeSummary(
        index=index,
        offset=offset,
        length=length,
        episode_id=str(data.get("episode_id", index)),
        task_id=data.get("task_id"),
        group_id=data.get("group_id"),
        success=bool(data.get("success", False)),
        score=float(data.get("score", 0.0) or 0.0),
        reward=float(sum(rewards)) if rewards else float(data.get("score", 0.0) or 0.0),
        end_reason=str(data.get("end_reason", "done")),
        turns=len(data.get("turns") or []),
        max_turns=int(data.get("max_turns", 0) or 0),
        tokens=len(data.get("token_ids") or []) if tokens is None else tokens,
        generated=int(sum(mask)) if generated is None else generated,
        failed=bool(data.get("failed", False)),
    )


@dataclass
class TrajectoryIndex:
    """Byte offsets and summaries of the complete lines of one JSONL file."""

    path: Path
    episodes: list[EpisodeSummary] = field(default_factory=list)
    #: Bytes indexed so far (always the end of a complete line).
    indexed_bytes: int = 0
    bad_lines: int = 0
    #: The last indexed bytes: if they change, the file was rewritten and is indexed again.
    tail: bytes = b""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _tail(self, f: Any) -> bytes:
        start = max(0, self.indexed_bytes - 64)
        f.seek(start)
        return f.read(self.indexed_bytes - start)

    def refresh(self) -> "TrajectoryIndex":
        """Index lines appended since the last call (the whole file the first time)."""
        with self.lock, open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < self.indexed_bytes or self._tail(f) != self.tail:  # rewritten: start over
                self.episodes, self.indexed_bytes, self.bad_lines, self.tail = [], 0, 0, b""
            if size == self.indexed_bytes:
                return self
            f.seek(self.indexed_bytes)
            offset = self.indexed_bytes
            for line in f:
                if not line.endswith(b"\n"):
                    break  # a line still being written
                if line.strip():
                    try:
                        data, tokens, generated = parse_for_index(line)
                        if not isinstance(data, dict):
                            raise ValueError("not a JSON object")
                    except ValueError:
                        self.bad_lines += 1
                    else:
                        self.episodes.append(summarize_episode(len(self.episodes), offset, len(line), data, tokens, generated))
                offset += len(line)
            self.indexed_bytes = offset
            self.tail = self._tail(f)
            return self

    def read(self, index: int) -> dict[str, Any]:
        """The full trajectory dict of episode *index* (one seek, one line)."""
        if not 0 <= index < len(self.episodes):
            raise IndexError(f"episode {index} is not in {self.path.name} ({len(self.episodes)} episodes)")
        ep = self.episodes[index]
        with open(self.path, "rb") as f:
            f.seek(ep.offset)
            return json.loads(f.read(ep.length))


class Run(RunDir):
    """A run directory to browse: :class:`~agentgym_core.rundir.RunDir` plus cached trajectory indexes."""

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__(path)
        if not self.path.is_dir():
            raise RunDirError(f"run directory {str(self.path)!r} does not exist; pass runs/<name> of a training run")
        self._indexes: dict[str, TrajectoryIndex] = {}
        self._lock = threading.Lock()

    def tokenizer_dir(self) -> Path | None:
        """A folder with ``tokenizer.json`` for decoding token ids: a checkpoint or the config's model."""
        cands: list[Path] = [c for c in (self.latest_checkpoint(),) if c is not None]
        cands += reversed(self.checkpoints())
        model_path = (self.config().get("model") or {}).get("path")
        if isinstance(model_path, str):
            cands.append(Path(model_path))
        for c in cands:
            if (c / "tokenizer.json").is_file():
                return c
        return None

    # -- trajectories ----------------------------------------------------------------------
    def trajectory_key(self, key: str) -> str:
        """*key* as :meth:`trajectory_files` names it: a ``.jsonl`` suffix is dropped, and an empty
        key means the latest training step's file (else the first eval dump)."""
        key = key.removesuffix(".jsonl")
        if key:
            return key
        files = self.trajectory_files()
        steps = [k for k in files if k.startswith("trajectories/")]
        if not files:
            raise RunDirError(f"run {str(self.path)!r} has no trajectory files yet")
        return steps[-1] if steps else files[0]

    def trajectory_index(self, key: str) -> TrajectoryIndex:
        """The (refreshed) index of file *key* (see :meth:`trajectory_key`); an unknown key raises
        :class:`RunDirError` listing the files there are."""
        key = self.trajectory_key(key)
        with self._lock:
            idx = self._indexes.get(key)
            if idx is None:
                files = self.trajectory_files()
                if key not in files:
                    shown = ", ".join(files[:5]) + (f", ... ({len(files)} in all)" if len(files) > 5 else "")
                    raise RunDirError(f"no trajectory file {key!r} in run {str(self.path)!r}; files: {shown or 'none'}")
                idx = self._indexes[key] = TrajectoryIndex(self.path / f"{key}.jsonl")
        return idx.refresh()

    def iter_summaries(self) -> Iterator[tuple[str, EpisodeSummary]]:
        for key in self.trajectory_files():
            if key.startswith("trajectories/"):
                for ep in self.trajectory_index(key).episodes:
                    yield key, ep

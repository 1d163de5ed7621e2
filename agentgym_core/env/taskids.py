"""The task ids an env server accepts: the union of the env's splits, as sorted runs ``[start, stop)``.

``POST /reset`` refuses a ``data_idx`` in no split with a 422 naming the runs (the contract says
task ids are always ids of ``splits()``), and ``GET /openapi.json`` declares the same set, so a
schema-driven client or fuzzer knows which ids are valid.
"""
from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

#: Above this many runs the schema gives only the smallest and largest id.
MAX_SCHEMA_RUNS = 64


def id_runs(splits: Mapping[str, Sequence[int]]) -> list[tuple[int, int]]:
    """The union of *splits* as sorted, disjoint, non-adjacent runs ``(start, stop)``."""
    spans: list[tuple[int, int]] = []
    for ids in splits.values():
        if isinstance(ids, range) and ids.step == 1:
            if len(ids):
                spans.append((ids.start, ids.stop))
        else:
            spans.extend((int(t), int(t) + 1) for t in ids)
    spans.sort()
    runs: list[tuple[int, int]] = []
    for start, stop in spans:
        if runs and start <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], stop))
        else:
            runs.append((start, stop))
    return runs


def contains(runs: Sequence[tuple[int, int]], task_id: int) -> bool:
    i = bisect.bisect_right(runs, (task_id, float("inf"))) - 1
    return i >= 0 and runs[i][0] <= task_id < runs[i][1]


def describe(runs: Sequence[tuple[int, int]]) -> str:
    """``0-1399, 100000-100199`` (the first few runs, then how many more)."""
    shown = ", ".join(f"{a}-{b - 1}" if b - a > 1 else str(a) for a, b in runs[:6])
    return shown + (f" and {len(runs) - 6} more ranges" if len(runs) > 6 else "") if runs else "none"


def schema(runs: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """The JSON schema of a valid ``data_idx`` (an integer in one of the runs)."""
    base = {"type": "integer", "minimum": 0, "description": "A task id of the env (GET /tasks lists them)."}
    if not runs:
        return base
    if len(runs) == 1 or len(runs) > MAX_SCHEMA_RUNS:
        return {**base, "minimum": runs[0][0], "maximum": runs[-1][1] - 1}
    return {**base, "minimum": runs[0][0], "maximum": runs[-1][1] - 1,
            "anyOf": [{"minimum": a, "maximum": b - 1} for a, b in runs]}

"""Field checks of the env server's JSON wire format; each failure is an :class:`HTTPError` with a fix."""
from __future__ import annotations

import json
import math
from typing import Any


class HTTPError(Exception):
    """Turned into a JSON error response ``{"error": message, ...extra}``."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


EXAMPLES = {
    "/create": "{}",
    "/reset": '{"id": 0, "data_idx": 3}',
    "/step": '{"id": 0, "action": "turn left", "seq": 1}',
    "/close": '{"id": 0}',
    "/batch": '{"ops": [{"op": "step", "id": 0, "action": "turn left", "seq": 1}]}',
}


def describe_value(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {json.dumps(value, default=str)[:60]}"


def int_field(name: str, value: Any, minimum: int | None = None) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise HTTPError(422, f"'{name}' must be an integer, got {describe_value(value)}")
    if minimum is not None and value < minimum:
        raise HTTPError(422, f"'{name}' must be >= {minimum}, got {value}")
    return value


def check_step(obs: Any, reward: Any, done: Any, info: Any) -> str | None:
    if not isinstance(obs, str):
        return f"step() returned an observation of type {type(obs).__name__}, expected str"
    try:
        ok = math.isfinite(float(reward))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        return f"step() returned reward {reward!r}, expected a finite number"
    if not isinstance(info, dict):
        return f"step() returned info of type {type(info).__name__}, expected dict"
    return None

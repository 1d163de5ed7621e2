"""The env server's JSON wire format: field checks (each failure an :class:`HTTPError` with a fix) and strict encoding."""
from __future__ import annotations

import json
import math
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response


class HTTPError(Exception):
    """Turned into a JSON error response ``{"error": message, ...extra}``."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


EXAMPLES = {
    "/create": '{} or {"idempotency_key": "3f2a9c"}',
    "/reset": '{"id": 0, "data_idx": 3}',
    "/step": '{"id": 0, "action": "turn left", "seq": 1}',
    "/close": '{"id": 0}',
    "/batch": '{"ops": [{"op": "step", "id": 0, "action": "turn left", "seq": 1}]}',
}


def json_kind(value: Any) -> str:
    """The JSON name of a decoded value's type (``null``, ``array``, ...), for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


def describe_value(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {json.dumps(value, default=str)[:60]}"


def int_field(name: str, value: Any, minimum: int | None = None, *, text: bool = False) -> int:
    """A JSON integer (a digit string only where the value came as *text*, e.g. a query parameter)."""
    if text and isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise HTTPError(422, f"'{name}' must be an integer, got {describe_value(value)}")
    if minimum is not None and value < minimum:
        raise HTTPError(422, f"'{name}' must be >= {minimum}, got {value}")
    return value


def key_field(name: str, body: dict[str, Any], max_len: int = 200) -> str | None:
    """An optional client-chosen key of *body*: absent, or a string of 1 to *max_len* characters."""
    if name not in body:
        return None
    value = body[name]
    if not isinstance(value, str) or not 0 < len(value) <= max_len:
        raise HTTPError(422, f"'{name}' must be a string of 1 to {max_len} characters (e.g. a UUID), "
                             f"got {describe_value(value)}")
    return value


#: What each field of a ``/batch`` op may hold (``GET /openapi.json`` says the same).
_OP_FIELDS = {"id": (0, False), "data_idx": (0, False), "seq": (1, True), "seed": (None, True)}


def check_batch_op(index: int, op: Any) -> None:
    """Refuse a ``/batch`` op the schema forbids (the whole request is then a 422 naming it).

    What the schema allows but the server cannot do (an unknown session, a step with no
    action) is answered per op, as the single call would answer it.
    """
    where = f"ops[{index}]"
    if not isinstance(op, dict):
        raise HTTPError(422, f"{where} must be a JSON object like {{\"op\": \"step\", \"id\": 0, \"action\": \"...\"}}, "
                             f"got {describe_value(op)}")
    if op.get("op") not in ("step", "reset"):
        raise HTTPError(422, f"{where}.op must be 'step' or 'reset', got {describe_value(op.get('op'))}")
    if "id" not in op:
        raise HTTPError(422, f"{where} needs the session 'id'")
    for name, (minimum, nullable) in _OP_FIELDS.items():
        if name in op and not (nullable and op[name] is None):
            int_field(f"{where}.{name}", op[name], minimum=minimum)
    if "action" in op and not isinstance(op["action"], str):
        raise HTTPError(422, f"{where}.action must be a string, got {describe_value(op['action'])}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """*text* with unpaired UTF-16 surrogates (which JSON's ``\\ud800`` escapes allow but no encoder
    takes) replaced by U+FFFD, so an env gets text it can encode; escaped pairs become their character."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


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


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """Strict JSON: numpy scalars become numbers, sets lists, NaN/inf null (never invalid JSON)."""
    try:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=_jsonable, allow_nan=False)
    except ValueError:
        data = json.dumps(_finite(json.loads(json.dumps(body, default=_jsonable))), ensure_ascii=False,
                          separators=(",", ":"), allow_nan=False)
    return Response(data.encode(), status_code=status, headers=headers, media_type="application/json")


async def read_body(request: Request, limit: int, *, required: bool = True) -> dict[str, Any]:
    """The request's JSON object body, read up to *limit* bytes (413 above); 400/422 for what is not
    a JSON object, naming the endpoint's expected body. Without a body: ``{}`` unless *required*."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise HTTPError(400, f"bad Content-Length header {length!r}")
        if int(length) > limit:
            raise HTTPError(413, f"request body of {length} bytes exceeds the server limit of {limit} bytes (--max-body)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, f"request body exceeds the server limit of {limit} bytes (--max-body)")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        if required:
            raise HTTPError(422, f"{request.url.path} needs a JSON object body, e.g. {EXAMPLES[request.url.path]}")
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise HTTPError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HTTPError(422, f"request body must be a JSON object, e.g. {EXAMPLES[request.url.path]}; got {json_kind(data)}")
    return data


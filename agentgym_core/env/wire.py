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


def json_bytes(body: Any) -> bytes:
    """Strict JSON: numpy scalars become numbers, sets lists, NaN/inf null (never invalid JSON)."""
    try:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=_jsonable, allow_nan=False)
    except ValueError:
        data = json.dumps(_finite(json.loads(json.dumps(body, default=_jsonable))), ensure_ascii=False,
                          separators=(",", ":"), allow_nan=False)
    return data.encode()


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """*body* as a strict JSON response (:func:`json_bytes`)."""
    return Response(json_bytes(body), status_code=status, headers=headers, media_type="application/json")


def too_large(what: str, unit: str, received: int, limit: int, flag: str, fix: str, *,
              at_least: bool = False, status: int = 413) -> HTTPError:
    """The error for a request over one of the server's caps (413 for bytes; *status* 422 for a count the
    schema bounds, as every schema violation is): its body names the cap (``limit``), what came
    (``received``; with *at_least*, what was read before giving up) and the flag that raises the cap."""
    setting = flag.lstrip("-").replace("-", "_")
    got = f"more than {limit}" if at_least else str(received)
    return HTTPError(status, f"{what} of {got} {unit} exceeds this server's cap of {limit} {unit} ({flag}); {fix}, "
                          f"or start the server with a higher {flag} (ServerSettings.{setting})",
                     limit=limit, received=received, setting=setting, flag=flag)


def batch_limit(max_body: int, max_batch_bytes: int) -> tuple[int, str]:
    """The cap on a ``/batch`` body (its own, and that of every body) and the flag that raises it."""
    return (max_batch_bytes, "--max-batch-bytes") if max_batch_bytes <= max_body else (max_body, "--max-body")


async def read_raw(request: Request, limit: int, flag: str = "--max-body", fix: str = "send a smaller body") -> bytes:
    """The request's body, read up to *limit* bytes (a 413 naming *flag* above, with or without Content-Length)."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise HTTPError(400, f"bad Content-Length header {length!r}")
        if int(length) > limit:
            raise too_large(f"{request.url.path} request body", "bytes", int(length), limit, flag, fix)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(f"{request.url.path} request body", "bytes", size, limit, flag, fix, at_least=True)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_object(raw: bytes, path: str, *, required: bool = True) -> dict[str, Any]:
    """*raw* as a JSON object; 400/422 for what is not one, naming the endpoint's expected body.
    An empty body is ``{}`` unless *required*."""
    if not raw.strip():
        if required:
            raise HTTPError(422, f"{path} needs a JSON object body, e.g. {EXAMPLES[path]}")
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise HTTPError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HTTPError(422, f"request body must be a JSON object, e.g. {EXAMPLES[path]}; got {json_kind(data)}")
    return data


async def read_body(request: Request, limit: int, *, required: bool = True) -> dict[str, Any]:
    """The request's JSON object body (:func:`read_raw`, then :func:`parse_object`)."""
    return parse_object(await read_raw(request, limit), request.url.path, required=required)


def parse_batch(raw: bytes, max_ops: int) -> list[dict[str, Any]]:
    """The ops of a ``/batch`` body: a 422 naming the cap for more than *max_ops* (the schema's ``maxItems``),
    a 422 naming the first op the schema
    forbids (:func:`check_batch_op`). Runs in a worker thread: a large body is not parsed on the event loop."""
    ops = parse_object(raw, "/batch").get("ops")
    if not isinstance(ops, list) or not ops:
        raise HTTPError(422, "'ops' must be a non-empty list like "
                             '[{"op": "step", "id": 0, "action": "turn left", "seq": 3}, {"op": "reset", "id": 1, "data_idx": 7}]')
    if len(ops) > max_ops:
        raise too_large("/batch request", "ops", len(ops), max_ops, "--max-batch-ops",
                        f"send at most {max_ops} ops per request (the rest in further requests)", status=422)
    for index, op in enumerate(ops):
        check_batch_op(index, op)
    return ops

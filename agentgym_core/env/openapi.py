"""The hand-written OpenAPI 3 description of the env server's wire format (``GET /openapi.json``)."""
from __future__ import annotations

from typing import Any

_ID = {"type": "integer", "minimum": 0, "description": "Session id returned by POST /create."}
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "description": "What went wrong and how to fix it."},
        "session": {"type": "string", "enum": ["open"]},
        "needs_reset": {"type": "boolean"},
        "limit": {"type": "integer", "description": "413 (bytes) or 422 (/batch ops): the cap the request is over."},
        "received": {"type": "integer", "description": "413 or 422: what the request carried (bytes read, or ops)."},
        "setting": {"type": "string", "description": "413 or 422: the ServerSettings field of the cap."},
        "flag": {"type": "string", "description": "413 or 422: the agentgym env serve flag that raises the cap."},
    },
}
_STEP_RESULT = {
    "type": "object",
    "required": ["observation", "reward", "score", "done", "info"],
    "properties": {
        "observation": {"type": "string"},
        "reward": {"type": "number"},
        "score": {"type": "number", "description": "Sum of this episode's rewards so far."},
        "done": {"type": "boolean"},
        "info": {"type": "object"},
    },
}
_RESET_RESULT = {
    "type": "object",
    "required": ["id", "observation", "reward", "score", "done"],
    "properties": {
        "id": _ID,
        "observation": {"type": "string"},
        "reward": {"type": "number"},
        "score": {"type": "number"},
        "done": {"type": "boolean"},
    },
}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "Body is not valid JSON.",
        401: "Missing or wrong bearer token.",
        404: "Unknown session id.",
        409: "No episode running (reset first) or a step seq older than the last applied one.",
        413: "Body larger than the server's cap (--max-body; for /batch also --max-batch-bytes); the body names "
             "the cap, what came and the flag.",
        422: "Body has the wrong shape or field types, or data_idx is in no split of the env.",
        429: "Session cap reached.",
        500: "The env raised; the session stays open and needs a reset.",
    }
    return {str(c): {"description": text[c], **_json({"$ref": "#/components/schemas/Error"})} for c in codes}


def _post(summary: str, body: dict[str, Any] | None, ok: dict[str, Any], *codes: int, required: bool = True) -> dict:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {"200": {"description": "OK", **_json(ok)}, **_errors(401, *codes)},
    }
    if body is not None:
        op["requestBody"] = {"required": required, **_json(body)}
    return {"post": op}


def openapi_schema(env_name: str, version: str | None = None, data_idx: dict[str, Any] | None = None,
                   max_batch_ops: int = 256) -> dict[str, Any]:
    """The OpenAPI 3.0 document of an env server serving *env_name*; *data_idx*: the schema of its
    task ids (:func:`agentgym_core.env.taskids.schema`; default any integer >= 0); *max_batch_ops*:
    its cap on the ops of one ``POST /batch``."""
    data_idx = data_idx or {"type": "integer", "minimum": 0}
    return {
        "openapi": "3.0.3",
        "info": {
            "title": f"AgentGym env server: {env_name}",
            "version": version or "0",
            "description": "AgentGym-compatible env protocol: create a session, reset it to a task, "
                           "step it with text actions, close it. See docs/envs.md.",
        },
        "components": {
            "schemas": {"Error": _ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
        "paths": {
            "/create": _post(
                "Open a session (one env instance). With idempotency_key, a resent create returns the session "
                "the first one opened (or is still opening) instead of opening another (AgentGym extension).",
                {"type": "object", "additionalProperties": True,
                 "properties": {"idempotency_key": {"type": "string", "minLength": 1, "maxLength": 200,
                                                    "description": "Client-chosen; one session per key."}}},
                {"type": "object", "required": ["id"],
                 "properties": {"id": _ID, "observation": {"type": "string", "description": "Empty until reset."}}},
                400, 413, 422, 429, 500, required=False,
            ),
            "/reset": _post(
                "Start task data_idx in the session; returns the first observation.",
                {"type": "object", "required": ["id", "data_idx"],
                 "properties": {"id": _ID, "data_idx": data_idx,
                                "seed": {"type": "integer", "nullable": True}}},
                _RESET_RESULT, 400, 404, 413, 422, 500,
            ),
            "/step": _post(
                "Apply one text action. With seq, a repeated seq returns the stored result (exactly once).",
                {"type": "object", "required": ["id", "action"],
                 "properties": {"id": _ID, "action": {"type": "string"},
                                "seq": {"type": "integer", "minimum": 1, "nullable": True}}},
                _STEP_RESULT, 400, 404, 409, 413, 422, 500,
            ),
            "/batch": _post(
                "Several step/reset ops of different sessions in one request (AgentGym extension); at most "
                "max_batch_ops ops (422 above, naming the cap) and max_batch_bytes bytes (413 above); GET /health says both.",
                {"type": "object", "required": ["ops"],
                 "properties": {"ops": {"type": "array", "minItems": 1, "maxItems": max_batch_ops, "items": {
                     "type": "object", "required": ["op", "id"],
                     "properties": {"op": {"type": "string", "enum": ["step", "reset"]}, "id": _ID,
                                    "action": {"type": "string"}, "data_idx": {"type": "integer", "minimum": 0},
                                    "seq": {"type": "integer", "minimum": 1, "nullable": True}}}}}},
                {"type": "object", "required": ["results"], "properties": {"results": {"type": "array", "items": {
                    "type": "object", "required": ["status", "body"],
                    "properties": {"status": {"type": "integer"}, "body": {"type": "object"}}}}}},
                400, 413, 422,
            ),
            "/close": _post(
                "Close the session and release its env.",
                {"type": "object", "required": ["id"], "properties": {"id": _ID}},
                {"type": "object", "required": ["id", "closed"],
                 "properties": {"id": _ID, "closed": {"type": "boolean"}}},
                400, 404, 413, 422,
            ),
            "/observation": {"get": {
                "summary": "The session's latest observation (a JSON string, as AgentGym servers answer).",
                "parameters": [{"name": "id", "in": "query", "required": True, "schema": _ID}],
                "responses": {"200": {"description": "OK", **_json({"type": "string"})}, **_errors(401, 404, 422)},
            }},
            "/health": {"get": {
                "summary": "Liveness and load; needs no token.",
                "security": [],
                "responses": {"200": {"description": "OK", **_json({
                    "type": "object", "required": ["status", "env", "sessions", "max_sessions"],
                    "properties": {"status": {"type": "string"}, "env": {"type": "string"},
                                   "sessions": {"type": "integer"}, "max_sessions": {"type": "integer"},
                                   "idempotent_create": {"type": "boolean",
                                                         "description": "POST /create honours idempotency_key."},
                                   "created": {"type": "integer",
                                               "description": "Sessions opened since the server started."},
                                   "max_batch_ops": {"type": "integer", "description": "Most ops in one POST /batch."},
                                   "max_batch_bytes": {"type": "integer",
                                                       "description": "Largest POST /batch body in bytes."},
                                   "env_calls_at_once": {"type": "integer",
                                                         "description": "Env calls the server now runs at once."}}})}},
            }},
            "/info": {"get": {
                "summary": "The env's self-description: instruction, action format, splits, categories.",
                "responses": {"200": {"description": "OK", **_json({
                    "type": "object", "required": ["name", "instruction", "action_format", "splits"],
                    "properties": {"name": {"type": "string"}, "version": {"type": "string", "nullable": True},
                                   "instruction": {"type": "string"},
                                   "action_format": {"type": "string", "enum": ["react", "tags", "free"]},
                                   "splits": {"type": "object", "additionalProperties": {"type": "integer"}},
                                   "categories": {"type": "object"}}})}, **_errors(401)},
            }},
            "/tasks": {"get": {
                "summary": "Task ids of every split (a list, or {range: [start, stop, step]}) and, per split with "
                           "categories, each id's category (AgentGym extension).",
                "responses": {"200": {"description": "OK", **_json({
                    "type": "object", "required": ["splits"],
                    "properties": {"splits": {"type": "object", "additionalProperties": {"oneOf": [
                        {"type": "array", "items": {"type": "integer"}},
                        {"type": "object", "required": ["range"], "properties": {"range": {
                            "type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3}}}]}},
                        "categories": {"type": "object", "additionalProperties": {
                            "type": "array", "items": {"type": "string", "nullable": True}}}}})}, **_errors(401)},
            }},
            "/openapi.json": {"get": {
                "summary": "This document.",
                "security": [],
                "responses": {"200": {"description": "OK", **_json({"type": "object"})}},
            }},
        },
    }

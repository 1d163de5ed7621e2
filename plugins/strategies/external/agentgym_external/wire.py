"""The OpenAI chat-completions wire format: requests read into :class:`ChatRequest`, replies written back.

Only what a text policy can honour is accepted; anything else is a 400 that names the field
(``n`` > 1, image parts, an unknown ``tool_choice``). Fields that do not change the tokens
(``user``, ``metadata``, ``store``, penalties at their defaults ...) are ignored, as a proxy would.
"""
from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .tools import RequestError, ToolCall, check_tools, normalize_messages


@dataclass
class ChatRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Any = "auto"
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    stream: bool = False
    include_usage: bool = False
    logprobs: bool = False
    model: str = ""


def read_request(body: Any) -> ChatRequest:
    """A checked :class:`ChatRequest` from a parsed JSON body (RequestError names what is wrong)."""
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object")
    n = body.get("n", 1)
    if n != 1:
        raise RequestError(f"n={n}: this endpoint samples one choice per call (the episode records each call); "
                           "send n calls", param="n")
    tools, choice = check_tools(body.get("tools"), body.get("tool_choice"))
    stop = body.get("stop") or ()
    stop = (stop,) if isinstance(stop, str) else tuple(stop)
    if not all(isinstance(s, str) and s for s in stop):
        raise RequestError("stop must be a string or a list of non-empty strings", param="stop")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    req = ChatRequest(
        messages=normalize_messages(body.get("messages")), tools=tools, tool_choice=choice,
        temperature=_number(body, "temperature", 0.0, 2.0), top_p=_number(body, "top_p", 0.0, 1.0),
        max_tokens=None if max_tokens is None else _positive(max_tokens, "max_tokens"), stop=stop,
        seed=body.get("seed") if isinstance(body.get("seed"), int) else None, stream=bool(body.get("stream")),
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        logprobs=bool(body.get("logprobs")), model=str(body.get("model") or ""),
    )
    if req.top_p is not None and req.top_p <= 0:
        raise RequestError("top_p must be > 0", param="top_p")
    return req


def _number(body: dict, key: str, low: float, high: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
            or not low <= value <= high:
        raise RequestError(f"{key} must be a number in [{low:g}, {high:g}], got {value!r}", param=key)
    return float(value)


def _positive(value: Any, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RequestError(f"{key} must be a positive integer, got {value!r}", param=key)
    return value


@dataclass
class ChatReply:
    """One sampled reply as the API returns it."""

    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    #: ``(token text, log-prob)`` per sampled token, for ``logprobs: true``.
    token_logprobs: list[tuple[str, float]] = field(default_factory=list)
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex[:24]}")
    created: int = field(default_factory=lambda: int(time.time()))

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return msg

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}

    def logprobs_field(self, wanted: bool) -> dict[str, Any] | None:
        if not wanted:
            return None
        return {"content": [{"token": t, "logprob": lp, "bytes": list(t.encode("utf-8")), "top_logprobs": []}
                            for t, lp in self.token_logprobs]}

    def completion(self, model: str, logprobs: bool) -> dict[str, Any]:
        """The ``chat.completion`` object."""
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": model,
                "choices": [{"index": 0, "message": self.message(), "finish_reason": self.finish_reason,
                             "logprobs": self.logprobs_field(logprobs)}],
                "usage": self.usage()}

    def chunks(self, model: str, logprobs: bool, include_usage: bool) -> list[str]:
        """The server-sent events of a streamed reply (the reply is sampled whole, then sent in pieces)."""
        def event(delta: dict[str, Any], finish: str | None = None, extra: dict | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, **(extra or {})}
            obj = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": model,
                   "choices": [choice]}
            return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"

        out = [event({"role": "assistant", "content": ""})]
        if self.content:
            out.append(event({"content": self.content}, extra={"logprobs": self.logprobs_field(logprobs)}))
        for i, call in enumerate(self.tool_calls):
            out.append(event({"tool_calls": [{"index": i, **call.to_openai()}]}))
        out.append(event({}, self.finish_reason))
        if include_usage:
            obj = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": model,
                   "choices": [], "usage": self.usage()}
            out.append(f"data: {json.dumps(obj)}\n\n")
        out.append("data: [DONE]\n\n")
        return out


def error_body(message: str, kind: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error object (the ``openai`` client raises it with this message)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}

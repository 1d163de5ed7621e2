"""OpenAI chat messages and tool calls, as the model's chat template writes and reads them.

Requests arrive in the OpenAI chat format: messages whose content may be a list of text parts,
assistant messages with ``tool_calls``, ``tool`` messages answering them, and a ``tools`` list of
function schemas. :func:`normalize_messages` checks them and turns them into plain dicts the
template can render; :func:`parse_tool_calls` reads the calls back out of a sampled reply, in the
format most tool-trained chat models use (Hermes, Qwen 2.5/3, SmolLM3): a JSON object
``{"name": ..., "arguments": {...}}`` inside ``<tool_call>...</tool_call>``. A template that
ignores ``tools`` (SmolLM2's) gets the schemas and that format explained in its system message
(:func:`tools_text`), so any chat model can be asked for tool calls.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

ROLES = ("system", "developer", "user", "assistant", "tool")
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


class RequestError(ValueError):
    """The request cannot be served as sent (an HTTP 400 naming the field and the fix)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param, self.code = param, code


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    #: The arguments as a JSON string (what the OpenAI API returns).
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


def text_of(content: Any, where: str) -> str:
    """A message's content as one string: a string, None (""), or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise RequestError(f"{where}.content[{i}] is a {kind!r} part; this endpoint serves a text model: "
                                   "send text parts only", param=f"{where}.content")
        return "".join(parts)
    raise RequestError(f"{where}.content must be a string or a list of text parts, got {type(content).__name__}",
                       param=f"{where}.content")


def arguments_key(arguments: Any) -> Any:
    """Arguments compared by meaning: a JSON string and the object it encodes are the same call."""
    if isinstance(arguments, str):
        try:
            return json.dumps(json.loads(arguments), sort_keys=True)
        except ValueError:
            return arguments
    return json.dumps(arguments, sort_keys=True)


def request_tool_calls(message: dict[str, Any], where: str) -> list[ToolCall]:
    """The ``tool_calls`` of an assistant message in a request."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise RequestError(f"{where}.tool_calls must be a list", param=f"{where}.tool_calls")
    out = []
    for i, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise RequestError(f"{where}.tool_calls[{i}] needs function.name", param=f"{where}.tool_calls")
        args = fn.get("arguments", "{}")
        out.append(ToolCall(str(call.get("id", "")), fn["name"], args if isinstance(args, str) else json.dumps(args)))
    return out


def normalize_messages(messages: Any) -> list[dict[str, Any]]:
    """Check *messages* and return them as ``{"role", "content", ...}`` dicts with string contents.

    ``developer`` is the newer name of ``system``; an assistant message keeps its ``tool_calls``
    (as :class:`ToolCall` objects) and a tool message its ``tool_call_id`` and ``name``.
    """
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list", param="messages")
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise RequestError(f"{where} must be an object", param=where)
        role = m.get("role")
        if role not in ROLES:
            raise RequestError(f"{where}.role must be one of {', '.join(ROLES)}, got {role!r}", param=f"{where}.role")
        msg: dict[str, Any] = {"role": "system" if role == "developer" else role,
                               "content": text_of(m.get("content"), where)}
        if role == "assistant":
            msg["tool_calls"] = request_tool_calls(m, where)
        elif role == "tool":
            msg["tool_call_id"] = str(m.get("tool_call_id", ""))
            if m.get("name"):
                msg["name"] = str(m["name"])
        out.append(msg)
    return out


def check_tools(tools: Any, tool_choice: Any) -> tuple[list[dict[str, Any]], Any]:
    """The ``tools`` that go into the prompt (none for ``tool_choice: none``) and the choice."""
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise RequestError("tools must be a list of {type: function, function: {...}}", param="tools")
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type", "function") != "function" or not isinstance(fn, dict) \
                or not isinstance(fn.get("name"), str):
            raise RequestError(f"tools[{i}] must be {{type: function, function: {{name, description, parameters}}}}",
                               param=f"tools[{i}]")
    choice = "auto" if tool_choice is None else tool_choice
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if not isinstance(name, str) or name not in {t["function"]["name"] for t in tools}:
            raise RequestError(f"tool_choice names function {name!r}, which is not in tools", param="tool_choice")
    elif choice not in ("auto", "none", "required"):
        raise RequestError(f"tool_choice must be auto, none, required or {{type: function, function: {{name}}}}, "
                           f"got {choice!r}", param="tool_choice")
    return ([] if choice == "none" else tools), choice


def tools_text(tools: list[dict[str, Any]], choice: Any) -> str:
    """The tool schemas and the call format, for a system message of a template that ignores ``tools``."""
    schemas = "\n".join(json.dumps(t["function"], ensure_ascii=False) for t in tools)
    text = ("# Tools\n\nYou may call one or more functions. Their signatures are inside <tools></tools>:\n"
            f"<tools>\n{schemas}\n</tools>\n\nTo call a function, write a JSON object with its name and arguments "
            "inside <tool_call></tool_call> tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call>")
    return text + choice_text(choice)


def choice_text(choice: Any) -> str:
    """What ``tool_choice`` asks of the model, in words (the reply is parsed either way, not constrained)."""
    if choice == "required":
        return "\n\nYou must call at least one function in this reply."
    if isinstance(choice, dict):
        return f"\n\nYou must call the function {choice['function']['name']} in this reply."
    return ""


def calls_as_text(calls: list[ToolCall]) -> str:
    """Tool calls written the way :func:`parse_tool_calls` reads them (an edited history's calls)."""
    return "\n".join(f"<tool_call>\n{json.dumps({'name': c.name, 'arguments': _loads(c.arguments)})}\n</tool_call>"
                     for c in calls)


def _loads(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def parse_tool_calls(text: str, make_id: Any) -> tuple[str | None, list[ToolCall]]:
    """``(content, tool_calls)`` of a sampled reply. A ``<tool_call>`` block that is not a JSON object with a
    string ``name`` stays in the content (the caller sees what the model wrote); *make_id* gives each call's id."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    last = 0
    for match in _CALL.finditer(text):
        try:
            obj = json.loads(match.group(1))
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        kept.append(text[last:match.start()])
        last = match.end()
        calls.append(ToolCall(make_id(), obj["name"], args if isinstance(args, str) else json.dumps(args,
                                                                                                  ensure_ascii=False)))
    if not calls:
        return text, []
    content = ("".join(kept) + text[last:]).strip()
    return content or None, calls

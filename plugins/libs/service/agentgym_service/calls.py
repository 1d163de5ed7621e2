"""Reading one action as one tool call, in linear time, with a message naming what is wrong.

Two forms are accepted, and nothing else:

- a text call that *is* the action: ``get_order(order_id="#W1234")`` (keyword or positional
  arguments, either quote, bare ids, a list ``["a", "b"]`` or a comma-separated string for
  lists); before it, at most one ``Action:`` marker (what precedes it is the agent's thought);
- a JSON function call as chat templates with tool support produce it:
  ``{"name": "get_order", "arguments": {"order_id": "#W1234"}}`` (``arguments`` may be a JSON
  string; ``parameters`` is read the same; an OpenAI ``{"function": {...}}`` item and a
  ``<tool_call>...</tool_call>`` wrapper too).

A call inside prose (``Sure, I will not call cancel_order(...)``) is never run, several
``Action:`` lines or several calls are refused, and so is text after the call. The action is
capped at ``max_chars``; the scanner reads each character once (no backtracking regex), so a
hostile action costs time proportional to its length, not more.

Values are typed the same in both forms: a bare number (``12345``, ``1.5``) or ``true``/``false`` in
a text call is a number or a boolean, as in JSON. A string argument takes a string only (quoted, or
bare text such as ``#W1234`` or ``2026-03-02``); a number, boolean, null, list or object there is
refused with one message in either form (``respond: message must be a string, got the number
12345; quote it: message="12345"``), the raw text of a one-string tool included.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from .tools import Tool, ToolSet

MAX_CHARS = 4000

_ACTION = re.compile(r"^[ \t]*action[ \t]*:", re.IGNORECASE | re.MULTILINE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_WRAPPERS = (("<tool_call>", "</tool_call>"), ("```json", "```"), ("```", "```"), ("`", "`"))
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\"}


class CallError(ValueError):
    """The action is not one valid tool call; the message says why and what to write."""


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    #: ``text`` or ``json``: how the agent wrote it.
    form: str = "text"


def parse_call(action: str, tools: ToolSet, *, max_chars: int = MAX_CHARS) -> Call:
    """The one tool call *action* holds; raises :class:`CallError` with feedback for the agent."""
    text = str(action or "")
    if len(text) > max_chars:
        raise CallError(f"the action is {len(text)} characters long; the limit is {max_chars}. Write one short "
                        f"tool call, {_example(tools)}")
    marks = [m.end() for m in _ACTION.finditer(text)]
    if len(marks) > 1:
        raise CallError(f"one action per turn: the reply has {len(marks)} 'Action:' lines. Write exactly one")
    if marks:
        text = text[marks[0]:]
    text = _unwrap(text.strip())
    if not text:
        raise CallError(f"the action is empty. Write one tool call, {_example(tools)}")
    if text[0] in "{[":
        return _json_call(text, tools)
    return _text_call(text, tools)


def _unwrap(text: str) -> str:
    for head, tail in _WRAPPERS:
        if text.startswith(head) and text.endswith(tail) and len(text) >= len(head) + len(tail):
            inner = text[len(head):len(text) - len(tail)].strip()
            if head not in inner:  # one wrapper, not several calls each in its own
                return inner
    return text


# -- text calls -------------------------------------------------------------------------------
def _text_call(text: str, tools: ToolSet) -> Call:
    i = 10 if text[:10].lower() == "functions." else 0
    name = _IDENT.match(text, i)
    j = name.end() if name else i
    while j < len(text) and text[j] in " \t":
        j += 1
    if name is None or j >= len(text) or text[j] != "(":
        word = name.group(0) if name else ""
        if word in tools and j >= len(text):
            raise CallError(f"{word} needs its arguments in parentheses: {tools[word].signature()}")
        inside = _call_inside(text, tools)
        if inside:
            raise CallError(f"the action must be one tool call and nothing else; {inside}( appears inside other "
                            f"text and was not run. Write only the call, e.g. {_usage(tools[inside])}")
        raise CallError(f"{_clip(text)} is not a tool call. Write one tool call, {_example(tools)}; to talk to the "
                        f"user, respond(\"...\"). Tools: {', '.join(tools.names())}")
    tool = _tool(name.group(0), tools)
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    try:
        positional, keywords, end = _Scanner(text, j + 1).arguments()
        if len(positional) > 1 or not tool.params:
            bind(tool, positional, keywords)
    except CallError:  # a one-string tool takes unquoted text with commas and quotes: respond(Hi, "you")
        if len(tool.params) != 1 or tool.params[0].type != "string" or keywords:
            raise
        positional, keywords, end = _raw_argument(text, j + 1, tool)
    rest = text[end:].strip().rstrip(";.").strip()
    if rest:
        raise CallError(f"write only the call: {_clip(rest)} follows {tool.name}(...). One action per turn, "
                        "nothing after it")
    return Call(tool.name, bind(tool, positional, keywords), "text")


def _raw_argument(text: str, start: int, tool: Tool) -> tuple[list[Any], dict[str, Any], int]:
    """``respond(Hello "there)``: a one-string tool takes the text up to the last ``)`` as its value."""
    end = text.rfind(")")
    if end < start:
        raise CallError(f"{tool.name}( has no closing parenthesis; write {_usage(tool)}")
    value = text[start:end].strip()
    key = f"{tool.params[0].name}"
    low = value[:len(key) + 3].lower()
    if low.startswith(key) and value[len(key):len(key) + 3].lstrip()[:1] in ("=", ":"):
        value = value[len(key):].lstrip()[1:].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    elif value[:1] in "[{" or _literal(value) is not value:  # a list, an object, a number: not text
        try:
            parsed = json.loads(value) if value[:1] in "[{" else _literal(value)
        except (ValueError, RecursionError):
            parsed = value
        if not isinstance(parsed, str):
            _check(tool, tool.params[0], parsed)  # refuses it as a JSON call's value is refused
    return [value], {}, end + 1


_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")
_BOOLEANS = {"true": True, "false": False}


def _literal(token: str) -> Any:
    """A bare token of a text call as Python and JSON read it: a number or a boolean, else the text."""
    if _NUMBER.fullmatch(token):
        return float(token) if "." in token else int(token)
    return _BOOLEANS.get(token.lower(), token)


def _call_inside(text: str, tools: ToolSet) -> str | None:
    """The first tool name written as a call somewhere in *text* (for the refusal message)."""
    low = text.lower()
    found = [(low.find(f"{name}("), name) for name in tools.names()]
    found = [(at, name) for at, name in found if at >= 0]
    return min(found)[1] if found else None


class _Scanner:
    """Arguments of a text call, one pass over the characters."""

    def __init__(self, text: str, i: int) -> None:
        self.s, self.i = text, i

    def _ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def _peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def arguments(self) -> tuple[list[Any], dict[str, Any], int]:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        self._ws()
        if self._peek() == ")":
            return positional, keywords, self.i + 1
        while True:
            self._ws()
            key = None
            name = _IDENT.match(self.s, self.i)
            if name:
                k = name.end()
                while k < len(self.s) and self.s[k] in " \t":
                    k += 1
                if k < len(self.s) and self.s[k] in "=:" and self.s[k:k + 2] != "==":
                    key, self.i = name.group(0), k + 1
            value = self._value(top=True)
            if key is None:
                if keywords:
                    raise CallError("a positional argument follows a keyword argument; name every argument")
                positional.append(value)
            elif key.lower() in keywords:
                raise CallError(f"argument {key!r} is given twice")
            else:
                keywords[key.lower()] = value
            self._ws()
            c = self._peek()
            self.i += 1
            if c == ")":
                return positional, keywords, self.i
            if c != ",":
                raise CallError("the call has no closing parenthesis" if not c else
                                f"expected ',' or ')' at character {self.i}, found {c!r}")

    def _value(self, top: bool) -> Any:
        self._ws()
        c = self._peek()
        if c in ("\"", "'"):
            return self._string(c)
        if c == "[":
            if not top:
                raise CallError("lists inside lists are not accepted; give a flat list of ids")
            self.i += 1
            items: list[Any] = []
            self._ws()
            if self._peek() == "]":
                self.i += 1
                return items
            while True:
                items.append(self._value(top=False))
                self._ws()
                c = self._peek()
                self.i += 1
                if c == "]":
                    return items
                if c != ",":
                    raise CallError("a list has no closing ']'" if not c else f"expected ',' or ']' in a list, found {c!r}")
        if c in "{(":
            raise CallError(f"{'objects' if c == '{' else 'expressions'} are not accepted as arguments; give strings "
                            "or lists of strings")
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in ",)]\n":
            self.i += 1
        value = self.s[start:self.i].strip()
        if not value:
            raise CallError(f"an argument is empty at character {start}")
        return _literal(value)

    def _string(self, quote: str) -> str:
        self.i += 1
        out: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\" and self.i + 1 < len(self.s):
                out.append(_ESCAPES.get(self.s[self.i + 1], "\\" + self.s[self.i + 1]))
                self.i += 2
                continue
            self.i += 1
            if c == quote:
                return "".join(out)
            out.append(c)
        raise CallError(f"a string opened with {quote} is never closed")


# -- JSON function calls ----------------------------------------------------------------------
def _json_call(text: str, tools: ToolSet) -> Call:
    try:
        obj, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError) as exc:
        raise CallError(f"the JSON function call does not parse ({_clip(str(exc), 80)}); write "
                        '{"name": "<tool>", "arguments": {...}}') from None
    if text[end:].strip():
        raise CallError(f"write only the call: {_clip(text[end:].strip())} follows the JSON call. One action per turn")
    if isinstance(obj, list):
        if len(obj) != 1:
            raise CallError(f"one action per turn: the JSON holds {len(obj)} calls. Send exactly one")
        obj = obj[0]
    if not isinstance(obj, dict):
        raise CallError('a JSON function call is an object: {"name": "<tool>", "arguments": {...}}')
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str):
        raise CallError('the JSON call has no "name": write {"name": "<tool>", "arguments": {...}}')
    args = next((obj[k] for k in ("arguments", "parameters", "args") if k in obj), {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError):
            raise CallError('"arguments" is a string that is not a JSON object') from None
    if not isinstance(args, dict):
        raise CallError(f'"arguments" must be an object of named arguments, got {type(args).__name__}')
    tool = _tool(name, tools)
    return Call(tool.name, bind(tool, [], {str(k).lower(): v for k, v in args.items()}), "json")


# -- binding and checking arguments -----------------------------------------------------------
def _tool(name: str, tools: ToolSet) -> Tool:
    key = name.lower()
    if key not in tools:
        close = difflib.get_close_matches(key, tools.names(), n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise CallError(f"unknown tool {_clip(name, 40)}.{hint} Tools: " + "; ".join(t.signature() for t in tools.tools))
    return tools[key]


def bind(tool: Tool, positional: list[Any], keywords: dict[str, Any]) -> dict[str, Any]:
    """*tool*'s arguments by name, each checked against its declared type; CallError says what is wrong."""
    names = tool.param_names
    unknown = [k for k in keywords if k not in names]
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise CallError(f"{tool.name} has no argument {_clip(unknown[0], 40)}{hint}; write {_usage(tool)}")
    if len(positional) > len(names):
        raise CallError(f"{tool.name} takes {len(names)} argument(s), got {len(positional)}; write {_usage(tool)}")
    args = dict(zip(names, positional))
    for key, value in keywords.items():
        if key in args:
            raise CallError(f"{tool.name} got {key!r} twice; write {_usage(tool)}")
        args[key] = value
    out = {}
    for param in tool.params:
        if param.name in args and args[param.name] is not None:
            out[param.name] = _check(tool, param, args[param.name])
    missing = [p.name for p in tool.params if p.required and out.get(p.name) in (None, "", [])]
    if missing:
        raise CallError(f"{tool.name} is missing {', '.join(missing)}; write {_usage(tool)}")
    return out


def _check(tool: Tool, param: Any, value: Any) -> Any:
    where = f"{tool.name}: {param.name}"
    if param.type == "array":
        if isinstance(value, str):
            parts = value.strip().strip("[]").replace(",", " ").split()
            return [p.strip("\"'") for p in parts if p.strip("\"'")]
        if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
            return [str(v).strip() for v in value]
        if isinstance(value, int) and not isinstance(value, bool):  # one bare id: item_ids=341823
            return [str(value)]
        raise CallError(f"{where} must be a list of ids like [\"a\", \"b\"], got {_kind(value)}")
    if param.type == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value.strip()) < 10:
            return int(value)
        raise CallError(f"{where} must be a whole number, got {_kind(value)}")
    if not isinstance(value, str):  # a number, boolean, null, list or object: alike in both call forms
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        fix = f'; quote it: {param.name}="{value}"' if number else ""
        raise CallError(f"{where} must be a string, got {_kind(value)}{fix}")
    text = value.strip()
    if param.enum and text.lower() not in param.enum:
        raise CallError(f"{where} must be one of {', '.join(map(repr, param.enum))}, got {_clip(text, 40)}")
    return text.lower() if param.enum else text


def _kind(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"the number {str(value)[:30]}"
    return {dict: "an object", list: "a list", bool: "a boolean", type(None): "null"}.get(type(value), _clip(str(value), 30))


def _usage(tool: Tool) -> str:
    if tool.usage:
        return tool.usage
    return f"{tool.name}(" + ", ".join(f'{p.name}=["..."]' if p.type == "array" else f'{p.name}="..."'
                                       for p in tool.params if p.required) + ")"


def _example(tools: ToolSet) -> str:
    read = next(iter(tools.of_kind("read")), None)
    return f"e.g. {_usage(read)}" if read else "e.g. respond(\"...\")"


def _clip(text: str, n: int = 60) -> str:
    line = text.split("\n", 1)[0]
    return repr(line if len(line) <= n else line[:n] + "...")

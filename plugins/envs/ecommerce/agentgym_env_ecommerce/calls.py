"""Reading the agent's action as a tool call, ``get_order(order_id="#W1234")``, and saying what is wrong.

Small models write calls loosely, so the parser takes a call after some words (the first
known tool called), keyword or positional arguments,
single or double quotes, unquoted ids, a list or a comma-separated string for item ids,
a missing closing parenthesis, a ``functions.`` prefix, backticks, and text after the call.
Anything it cannot read raises :class:`CallError` whose message names the problem and the
valid tools or arguments; the env turns it into the observation.
"""
from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tool:
    name: str
    params: tuple[str, ...]
    about: str
    #: Parameters that take a list of ids.
    lists: tuple[str, ...] = ()

    def signature(self) -> str:
        if self.name == "find_customer":
            return "find_customer(email) or find_customer(name, zip)"
        return f"{self.name}({', '.join(self.params)})"


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("respond", ("message",), "talk to the customer"),
    Tool("find_customer", ("email", "name", "zip"), "identify the customer"),
    Tool("get_customer", ("customer_id",), "payment methods, orders"),
    Tool("get_order", ("order_id",), "status, items, payment"),
    Tool("get_product", ("product_id",), "options: item ids, prices, stock"),
    Tool("cancel_order", ("order_id", "reason"), ""),
    Tool("modify_address", ("order_id", "address"), ""),
    Tool("modify_payment", ("order_id", "payment_method_id"), ""),
    Tool("modify_items", ("order_id", "item_ids", "new_item_ids", "payment_method_id"), "", lists=("item_ids", "new_item_ids")),
    Tool("return_items", ("order_id", "item_ids", "payment_method_id"), "", lists=("item_ids",)),
    Tool("exchange_items", ("order_id", "item_ids", "new_item_ids", "payment_method_id"), "",
         lists=("item_ids", "new_item_ids")),
    Tool("transfer_to_human", ("summary",), "hand the customer to a human agent"),
)}

#: Tools that change the store.
WRITES = frozenset({"cancel_order", "modify_address", "modify_payment", "modify_items", "return_items", "exchange_items"})


def tool_list() -> str:
    """One line per tool, for the instruction (the writes' names say what they do)."""
    return "\n".join(f"{t.signature()}{f': {t.about}' if t.about else ''}" for t in TOOLS.values())


class CallError(ValueError):
    """The action is not a valid tool call; the message says why and what is valid."""


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]


_HEAD = re.compile(r"^\s*(?:functions\.|tools?\.)?([A-Za-z_]\w*)\s*\(", re.IGNORECASE)
_ACTION = re.compile(r"^\s*action\s*:\s*", re.IGNORECASE | re.MULTILINE)
_PAIR = re.compile(r"(\w+)\s*[=:]\s*(\"[^\"]*\"?|'[^']*'?|\[[^\]]*\]?|[^,]+)")
_EXAMPLE = 'e.g. get_order(order_id="#W1234") or respond("How can I help?")'


def parse_call(action: str) -> Call:
    """The tool call in *action*; raises :class:`CallError` with feedback for the agent."""
    text = str(action or "")
    marks = list(_ACTION.finditer(text))
    if marks:
        text = text[marks[-1].end():]
    text = text.strip().strip("`").strip()
    if not text:
        raise CallError(f"the action is empty. Write one tool call, {_EXAMPLE}")
    head = _HEAD.match(text)
    if head is None:  # a call after some words ("Let me check: get_order(...)"): the first known tool called
        embedded = re.search(rf"\b(?:{'|'.join(TOOLS)})\s*\(", text)
        if embedded:
            text = text[embedded.start():]
            head = _HEAD.match(text)
    if head is None:
        word = re.match(r"[A-Za-z_]\w*", text)
        if word and word.group(0).lower() in TOOLS:
            tool = TOOLS[word.group(0).lower()]
            raise CallError(f"{tool.name} needs its arguments in parentheses: {tool.signature()}")
        raise CallError(f"{_clip(text)} is not a tool call. Write one tool call, {_EXAMPLE}; "
                        f"to talk to the customer use respond(\"...\"). Tools: {_names()}")
    name = head.group(1).lower()
    if name not in TOOLS:
        close = difflib.get_close_matches(name, TOOLS, n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise CallError(f"unknown tool {head.group(1)!r}.{hint} Tools: "
                        + "; ".join(t.signature() for t in TOOLS.values()))
    tool = TOOLS[name]
    rest = text[head.end():].split("\n", 1)[0]  # one line: what a model writes after the call is not part of it
    inner = rest[:rest.rfind(")")] if ")" in rest else rest
    args = _bind(tool, *_arguments(tool, inner))
    return Call(tool.name, args)


def _arguments(tool: Tool, inner: str) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword argument values of the text between the parentheses."""
    inner = inner.strip()
    if not inner:
        return [], {}
    try:
        node = ast.parse(f"_({inner})", mode="eval").body
    except SyntaxError:
        node = None
    if isinstance(node, ast.Call):
        source = f"_({inner})"
        positional = [_value(a, source) for a in node.args]
        keywords = {k.arg: _value(k.value, source) for k in node.keywords if k.arg}
        return positional, keywords
    if len(tool.params) == 1:  # respond(Hello "there) and the like: the whole text is the message
        key = re.match(rf"\s*{tool.params[0]}\s*[=:]\s*", inner)
        return [_unquote(inner[key.end():] if key else inner)], {}
    pairs = {k: _unquote(v) for k, v in _PAIR.findall(inner)}
    if pairs:
        return [], pairs
    return [_unquote(part) for part in inner.split(",")], {}


def _value(node: ast.AST, source: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:  # an unquoted id such as W1234, or an expression: keep its text
        return _unquote(ast.get_source_segment(source, node) or "")


def _unquote(text: str) -> str:
    return text.strip().strip("\"'").strip()


def _bind(tool: Tool, positional: list[Any], keywords: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of *tool* from the parsed values; CallError names what is wrong."""
    keywords = {k.lower(): v for k, v in keywords.items()}
    unknown = [k for k in keywords if k not in tool.params]
    if unknown:
        close = [p for p in tool.params if unknown[0] in p] or difflib.get_close_matches(unknown[0], tool.params, n=1,
                                                                                          cutoff=0.5)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise CallError(f"{tool.name} has no argument {unknown[0]!r}{hint}; write {tool.signature()}")
    params = tool.params
    if tool.name == "find_customer" and positional and not keywords:
        params = ("email",) if len(positional) == 1 else ("name", "zip")
    if len(positional) > len(params):
        raise CallError(f"{tool.name} takes {len(params)} argument(s), got {len(positional)}; "
                        f"write {tool.signature()}")
    args = dict(zip(params, positional))
    for key, value in keywords.items():
        if key in args:
            raise CallError(f"{tool.name} got {key!r} twice; write {tool.signature()}")
        args[key] = value
    for key, value in list(args.items()):
        args[key] = _ids(value) if key in tool.lists else _text(value)
    if tool.name == "find_customer":
        if not (args.get("email") or (args.get("name") and args.get("zip"))):
            raise CallError('find_customer needs email="..." or name="First Last" and zip="12345"')
        return args
    missing = [p for p in tool.params if p not in args or args[p] in ("", [])]
    if missing:
        example = ", ".join(f'{p}="..."' if p not in tool.lists else f'{p}=["..."]' for p in tool.params)
        raise CallError(f"{tool.name} is missing {', '.join(missing)}; write {tool.name}({example})")
    return args


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    return str(value).strip()


def _ids(value: Any) -> list[str]:
    if isinstance(value, (list, tuple, set)):
        parts = [str(v) for v in value]
    else:
        parts = re.split(r"[,\s]+", str(value).strip("[]() "))
    return [p.strip().strip("\"'") for p in parts if p.strip().strip("\"'")]


def _names() -> str:
    return ", ".join(TOOLS)


def _clip(text: str, n: int = 60) -> str:
    text = text.splitlines()[0] if text.splitlines() else text
    return repr(text if len(text) <= n else text[:n] + "...")

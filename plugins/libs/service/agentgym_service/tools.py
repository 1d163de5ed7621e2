"""Tools declared once: name, description, typed parameters (a JSON schema), and what kind of call it is.

The same declaration gives the instruction's tool list (``signature``), the JSON function
schemas a chat template with tool support renders (``ToolSet.schemas``, the OpenAI shape),
and the checks the call parser applies to arguments (:mod:`.calls`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: What a tool does, for the env: talk to the user, identify the user, read, change, end.
KINDS = ("respond", "auth", "read", "write", "end")
TYPES = ("string", "array", "integer")


@dataclass(frozen=True)
class Param:
    name: str
    description: str
    #: ``string``, ``array`` (of strings) or ``integer``.
    type: str = "string"
    required: bool = True
    enum: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"param {self.name}: type must be one of {TYPES}, got {self.type!r}")

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            out["items"] = {"type": "string"}
        if self.enum:
            out["enum"] = list(self.enum)
        return out


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: tuple[Param, ...] = ()
    kind: str = "read"
    #: How the instruction writes the call when the plain signature would mislead
    #: (``find_customer(email) or find_customer(name, zip)``).
    usage: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"tool {self.name}: kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def signature(self) -> str:
        return self.usage or f"{self.name}({', '.join(self.param_names)})"

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling shape, which chat templates with ``tools`` render."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object", "properties": {p.name: p.schema() for p in self.params},
                           "required": [p.name for p in self.params if p.required]}}}


@dataclass(frozen=True)
class ToolSet:
    tools: tuple[Tool, ...]
    by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names must be unique: {names}")
        object.__setattr__(self, "by_name", {t.name: t for t in self.tools})

    def __getitem__(self, name: str) -> Tool:
        return self.by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def names(self) -> list[str]:
        return list(self.by_name)

    def of_kind(self, kind: str) -> list[Tool]:
        return [t for t in self.tools if t.kind == kind]

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools]

    def text(self) -> str:
        """One line per tool for the instruction: ``get_order(order_id): status, items, payment``."""
        return "\n".join(f"{t.signature()}: {t.description}" for t in self.tools)

"""A scripted agent for the default MiniWoB++ tasks that reads only the observation text.

It parses the task sentence and the element list exactly as an LLM agent would see them,
so it also plays through ``agentgym env serve``. Used by the tests and the benchmark, and as
a reference of what "solvable from the text rendering" means.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_ELEMENT = re.compile(r'^(\s*)\[(\d+)\] (\S+)(?: "((?:[^"\\]|\\.)*)")?(.*)$')
_ORDINAL = {"1st": 0, "2nd": 1, "3rd": 2}
_WIDGET_ROLE = {"button": "button", "checkbox": "checkbox", "radio": "radio", "text": "textbox", "textarea": "textbox"}


@dataclass
class Element:
    id: int
    role: str
    text: str
    rest: str

    @property
    def value(self) -> str | None:
        m = re.search(r'value="((?:[^"\\]|\\.)*)"', self.rest)
        return m.group(1).replace('\\"', '"') if m else None

    @property
    def checked(self) -> bool:
        return " checked" in f" {self.rest}" and "unchecked" not in self.rest


def parse_observation(obs: str) -> tuple[str, list[Element]]:
    """``(task sentence, elements)`` of a webnav observation."""
    task, elements = "", []
    for line in obs.splitlines():
        if line.startswith("Task: "):
            task = line[6:].strip()
            continue
        m = _ELEMENT.match(line)
        if m:
            text = (m.group(4) or "").replace('\\"', '"')
            elements.append(Element(int(m.group(2)), m.group(3), text, m.group(5)))
    return task, elements


@dataclass
class ScriptedSolver:
    """Call :meth:`act` with each observation; returns the next action (or ``None`` if the
    task sentence is not one it knows). Make one solver per episode."""

    done_actions: list[str] = field(default_factory=list)

    def act(self, obs: str) -> str | None:
        task, els = parse_observation(obs)
        action = _plan(task, els, self.done_actions)
        if action is not None:
            self.done_actions.append(action)
        return action


def scripted(env: Any, observation: str) -> Iterator[str]:
    """The ``webnav.scripted`` expert (``register_experts``): a :class:`ScriptedSolver` for the episode,
    fed each observation; it stops when the task sentence is not one it knows."""
    solver = ScriptedSolver()
    while (action := solver.act(observation)) is not None:
        observation = yield action


def _first(els: list[Element], role: str | None = None, text: str | None = None) -> Element | None:
    for el in els:
        if (role is None or el.role == role) and (text is None or el.text == text):
            return el
    return None


def _click(el: Element | None) -> str | None:
    return f"click [{el.id}]" if el else None


def _submit(els: list[Element]) -> str | None:
    for el in els:
        if el.role == "button" and el.text.lower() in ("submit", "login", "ok"):
            return _click(el)
    return None


def _fill(els: list[Element], boxes: list[Element], texts: list[str]) -> str | None:
    for box, text in zip(boxes, texts):
        if box.value != text:
            return f"type [{box.id}] [{text}]"
    return _submit(els)


def _plan(task: str, els: list[Element], history: list[str]) -> str | None:
    boxes = [e for e in els if e.role in ("textbox", "password")]
    if task == "Click the button.":
        return _click(_first(els, "button"))
    if m := re.fullmatch(r"Click button (\w+), then click button (\w+)\.", task):
        first = _first(els, "button", m.group(1))
        if first and f"click [{first.id}]" not in history:
            return _click(first)
        return _click(_first(els, "button", m.group(2)))
    if m := re.fullmatch(r"Click button (\w+)\.", task):
        return _click(_first(els, "button", m.group(1)))
    if m := re.fullmatch(r'Click on the "(.+)" button\.', task):
        return _click(_first(els, "button", m.group(1)))
    if m := re.fullmatch(r'Click on the link "(.+)"\.', task):
        return _click(_first(els, None, m.group(1)))
    if task == 'Close the dialog box by clicking the "x".':
        return _click(next((e for e in els if e.role == "button" and 'title="Close"' in e.rest), None))
    if m := re.fullmatch(r'Click the button in the dialog box labeled "(.+)"\.', task):
        label = m.group(1)
        if label.lower() in ("x", "close"):
            return _click(next((e for e in els if e.role == "button" and 'title="Close"' in e.rest), None))
        return _click(_first(els, "button", label))
    if m := re.fullmatch(r"Click on Tab #(\d+)\.", task):
        return _click(next((e for e in els if e.text == f"Tab #{m.group(1)}"), None))
    if task == "Expand the section below and click submit.":
        header = next((e for e in els if e.text.startswith("Section #")), None)
        if header and f"click [{header.id}]" not in history:
            return _click(header)
        return _submit(els)
    if m := re.fullmatch(r'Click on a "(\w+)" widget\.', task):
        kind = m.group(1)
        for el in els:
            if el.role == _WIDGET_ROLE.get(kind) and ((kind == "textarea") == ("multiline" in el.rest)):
                return _click(el)
        return None
    if task == "Focus into the textbox.":
        return _click(boxes[0] if boxes else None)
    if m := re.fullmatch(r"Focus into the (\w+) input textbox\.", task):
        index = _ORDINAL.get(m.group(1), 0)
        return _click(boxes[index] if index < len(boxes) else None)
    if m := re.fullmatch(r'Enter "(.*)" into the text field and press Submit\.', task):
        return _fill(els, boxes[:1], [m.group(1)])
    if m := re.fullmatch(r'Enter the password "(.*)" into both text fields and press submit\.', task):
        return _fill(els, boxes[:2], [m.group(1)] * 2)
    if m := re.fullmatch(r'Enter the username "(.*)" and the password "(.*)" into the text fields and press login\.', task):
        return _fill(els, boxes[:2], [m.group(1), m.group(2)])
    if m := re.fullmatch(r"Select (.+) from the list and click Submit\.", task):
        combo = _first(els, "combobox")
        if combo and combo.value != m.group(1):
            return f"select [{combo.id}] [{m.group(1)}]"
        return _submit(els)
    if m := re.fullmatch(r"Select (.+) and click Submit\.", task):
        wanted = set() if m.group(1) == "nothing" else set(m.group(1).split(", "))
        for el in els:
            if el.role in ("checkbox", "radio") and (el.text in wanted) != el.checked:
                if el.role == "radio" and el.checked:
                    continue
                return _click(el)
        return _submit(els)
    return None

"""Action parsing per env format, and the hint an unparsable reply gets instead of a crash.

``react``: ``Thought: ...`` then ``Action: <action>`` (the action is the rest of that line).
``tags``: the first ``<name>...</name>`` block other than thinking tags, passed whole to the
env (e.g. ``<search>capital of France</search>``). ``free``: the whole reply, stripped.
"""
from __future__ import annotations

import logging
import re

FORMATS = ("react", "tags", "free")

#: Tags that hold reasoning or env output, never an action.
NON_ACTION_TAGS = frozenset({"think", "thinking", "thought", "reasoning", "information", "observation", "result"})

_REACT = re.compile(r"(?<![A-Za-z])Action[ \t]*:[ \t]*([^\n]*)", re.IGNORECASE)
_TAG = re.compile(r"<([A-Za-z_][\w-]*)>(.*?)</\1>", re.DOTALL)

#: Generation stops once the model starts writing what the env should answer.
STOP_STRINGS = {
    "react": ("\nObservation:",),
    "tags": ("</search>", "</answer>", "</action>"),
    "free": (),
}

HINTS = {
    "react": "Reply in this format:\nThought: <your reasoning>\nAction: <one action>",
    "tags": "Put your action in tags, e.g. <search>query</search> or <answer>final answer</answer>.",
    "free": "Reply with the action itself.",
}


def check_format(action_format: str) -> str:
    if action_format not in FORMATS:
        raise ValueError(f"action format must be one of {', '.join(FORMATS)}, got {action_format!r}")
    return action_format


def parse_action(text: str, action_format: str) -> tuple[str | None, str | None]:
    """``(action, None)`` or ``(None, reason)`` for the model's reply *text*."""
    fmt = check_format(action_format)
    if fmt == "free":
        action = text.strip()
        return (action, None) if action else (None, "the reply was empty")
    if fmt == "react":
        for match in _REACT.finditer(text):
            action = match.group(1).strip()
            if action:
                return action, None
        if re.search(r"Action\s*:", text, re.IGNORECASE):
            return None, "the 'Action:' line was empty"
        return None, "no 'Action:' line found"
    for match in _TAG.finditer(text):
        if match.group(1).lower() not in NON_ACTION_TAGS:
            if not match.group(2).strip():
                return None, f"the <{match.group(1)}> tag was empty"
            return match.group(0).strip(), None
    return None, "no action tag such as <search>...</search> or <answer>...</answer> found"


def parse_error_observation(reason: str, action_format: str) -> str:
    """The observation the agent sees instead of an env step when its reply had no action."""
    return f"Invalid reply: {reason}. {HINTS[check_format(action_format)]}"


_told: set[tuple[str, str, str]] = set()


def say_format_override(env_name: str, declared: str, used: str) -> None:
    """Say once per process that ``agent.action_format`` (*used*) overrides the *declared* format
    that env *env_name*'s instruction asks for."""
    key = (env_name, check_format(declared), check_format(used))
    if declared == used or key in _told:
        return
    _told.add(key)
    example = {"react": '"Thought: ... Action: X"', "tags": '"<action>X</action>"', "free": "a bare action"}[declared]
    read_as = {"react": "'Thought: ... Action: X'", "tags": "<action>X</action>",
               "free": "the action itself (the whole reply)"}[used]
    logging.getLogger("agentgym.rollout").warning(
        "agent.action_format=%s overrides env %r's %s format: its instruction asks for replies like %s, which are "
        "now read as %s. Drop agent.action_format to use the env's own.", used, env_name, declared, example, read_as)

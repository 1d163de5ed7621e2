"""Action text clean-up shared by the text-game envs, so every env reads a reply the same way.

:func:`normalize_action` is this project's reading (lower case, the text after the last
``Action:``, first line, outer quotes and brackets dropped). :func:`agentgym_action` is the
reading of AgentGym's babyai and textcraft clients, for envs in AgentGym compatibility mode.
"""
from __future__ import annotations

import re

_ACTION_MARK = re.compile(r"action\s*:", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
# AgentGym's clients take the text after "Action:" up to the end of its line (blank lines
# between the mark and the action are skipped) and keep only letters, digits, commas and spaces.
_AGENTGYM_MARK = re.compile(r"Action:\s*(.*?)(?=\n|$)", re.DOTALL)
_AGENTGYM_DROPPED = re.compile(r"[^A-Za-z0-9, ]+")


def normalize_action(action: str) -> str:
    """Lower-case action text; keeps only what follows the last "Action:" if present.

    Only the first line counts; surrounding backticks, quotes, brackets and final ``.``/``!``
    are dropped and runs of whitespace become one space: ``"Action: Go to the Red Ball."`` ->
    ``"go to the red ball"``.
    """
    text = str(action)
    marks = list(_ACTION_MARK.finditer(text))
    if marks:
        text = text[marks[-1].end():]
    text = text.strip()
    text = text.splitlines()[0] if text else ""
    text = text.lower().strip().strip("`'\"[]().!").strip()
    return _SPACES.sub(" ", text)


def agentgym_action(action: str) -> str:
    """*action* as AgentGym's babyai and textcraft clients send it to their servers.

    The text after the last ``Action:`` (case-sensitive, as theirs) to the end of its line, or
    the whole text when it has no such mark (our agents send the bare action); then every
    character other than ASCII letters, digits, commas and spaces is removed and whitespace
    is collapsed. Case is kept: ``"Action: craft 1 stick, now!"`` -> ``"craft 1 stick, now"``.
    """
    text = str(action)
    marks = _AGENTGYM_MARK.findall(text)
    if marks:
        text = marks[-1]
    return " ".join(_AGENTGYM_DROPPED.sub("", text).split())

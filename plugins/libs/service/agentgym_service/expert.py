"""What every scripted expert of an env on the kit does the same way: writing calls, following the
user's lines (which request this is, what was said, whether a confirmation got a yes), refusing.

An env's expert subclasses :class:`ScriptedExpert` (``speaker``, ``kinds``) and decides the
actions; it sees only the observations.
"""
from __future__ import annotations

import json
import re
from typing import Any

#: How the rule-based user's yes lines start (both phrase pools).
YES = re.compile(r"(Yes|Correct|That's exactly it)")


def call(tool: str, **args: Any) -> str:
    """``tool(key="value", ...)`` as an agent writes it (lists as JSON)."""
    return f"{tool}({', '.join(f'{k}={json.dumps(v)}' for k, v in args.items())})"


def respond(message: str) -> str:
    return call("respond", message=message)


class ScriptedExpert:
    #: How the user's lines are labelled (the env's ``speaker``).
    speaker = "User"
    #: ``(kind, pattern)``: the first pattern found in a request's opening line names its kind.
    kinds: tuple[tuple[str, str], ...] = ()

    def __init__(self) -> None:
        self.identity: str | None = None
        self.said_all = ""
        self.new_request()

    def new_request(self) -> None:
        """Forget the last request (its kind, what was said about it, its confirmation)."""
        self.kind: str | None = None
        self.said = ""
        self.asked = self.asked_confirm = self.confirmed = self.finished = False

    def hear(self, obs: str) -> bool:
        """Follow a user line (False: *obs* is a tool's answer). After a finished request, a line opens the next."""
        prefix = f"{self.speaker}:"
        if not obs.startswith(prefix):
            if m := re.match(r"Identified .* \((\S+)\)\.$", obs):  # Desk.identify_by_email's answer
                self.identity = m.group(1)
            return False
        text = obs[len(prefix):].strip()
        if self.finished:
            self.new_request()
        if self.kind is None:
            self.kind = next((k for k, pattern in self.kinds if re.search(pattern, text, re.IGNORECASE)), None)
        self.said += " " + text
        self.said_all += " " + text
        if self.asked_confirm and YES.match(text):
            self.confirmed = True
        self.asked_confirm = False
        return True

    def ask_once(self, wants: list[str]) -> str:
        self.asked = True
        return respond("Sure, I can help with that. Could you give me " + ", ".join(wants) + "?")

    def refuse(self, why: str) -> str:
        self.finished = True
        return respond(f"I'm sorry, but I cannot do that: {why}.")


class PlannedExpert(ScriptedExpert):
    """An expert that plans a request's writes as ``(tool, args, summary)`` and then, one by one,
    confirms each (:meth:`confirmation`) and makes it; tool answers that report a change call
    :meth:`made`."""

    def new_request(self) -> None:
        super().new_request()
        self.plan: list[tuple[str, dict[str, Any], str]] = []
        self.done: list[str] = []
        self.tell = ""

    def made(self) -> None:
        self.done.append(self.plan.pop(0)[2])
        self.confirmed = False

    def prepare(self, tool: str, args: dict[str, Any], summary: str) -> tuple[dict[str, Any], str]:
        """The arguments and summary of the next write, from what is known now (ids created since)."""
        return args, summary

    def next_write(self) -> str:
        if not self.plan:
            self.finished = True
            if self.tell:  # the answer on its own: the first message naming candidates is the answer
                return respond(f"All done. {self.tell}")
            return respond("All done: " + "; ".join(self.done) + ".")
        tool, planned, summary = self.plan[0]
        args, summary = self.prepare(tool, planned, summary)
        self.plan[0] = (tool, planned, summary)  # what "All done" repeats is what was confirmed
        if not self.confirmed:
            self.asked_confirm = True
            return respond(self.confirmation(summary))
        return call(tool, **args)

    def confirmation(self, summary: str) -> str:
        return f"I will {summary}. Do you confirm?"


class Misdescribing:
    """Mixed into an expert: its confirmation describes another change (task by task: an extra action,
    a blanket question, another target) and it acts whatever the answer. Must never succeed."""

    extra = "and close your account"

    def __init__(self, task_id: int = 0) -> None:
        super().__init__()
        self.way = task_id % 3

    def other(self, summary: str) -> str:
        return summary + " for someone else"

    def confirmation(self, summary: str) -> str:
        self.confirmed = True
        if self.way == 0:
            return f"I will {summary}, {self.extra}. Do you confirm?"
        if self.way == 1:
            return "May I go ahead with the change?"
        return f"I will {self.other(summary)}. Do you confirm?"

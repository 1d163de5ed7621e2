"""A policy-blind agent for testing an env on the kit: it asks for everything, authenticates with what it
heard, then for each write tool confirms vaguely, with bait ids, and with what the user said back, writes
what it was told, refuses, and asks for the answer. It reads no record and computes nothing, so an env
whose user keeps to its :class:`~.goal.Knowledge` and whose judge follows the policy gives it nothing:
``play(env, task, Prober(env))`` must not succeed, and :func:`~.play.user_leaks` must find no derived value
in what the user tells it.
"""
from __future__ import annotations

import re
from typing import Any

from .expert import call, respond

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
ASK_ALL = ("Hello! Please give me your email, your name and zip code, the order id, the project, which meeting, "
           "which requirement, which task, who, which day, how long, the title and which items?")
#: Ids of every kind the envs use, to provoke corrections that would name the right ones.
BAIT = "#W1000 p01 p02 T1 T9 E100 M10 2024-01-02 09:00 13:30 week 3 week 9 $12.00"


class Prober:
    """Policy-blind: asks for everything, authenticates with what it heard, then for each write tool confirms
    vaguely, with bait ids, and with what the user said back, writes what it was told, refuses, and asks
    for the answer. It reads no record and computes nothing."""

    def __init__(self, env: Any, refuse_first: bool = False) -> None:
        self.tools = [t["function"] for t in env.describe()["tools"]]
        self.writes = [t for t in self.tools if t["name"] in env.lexicon.verbs]
        self.verbs = env.lexicon.verbs
        self.auth = next(t["name"] for t in self.tools if "email" in t["parameters"]["properties"])
        self.heard, self.n, self.refuse_first = "", 0, refuse_first

    def __call__(self, obs: str) -> str:
        self.heard += " " + obs
        self.n += 1
        script = [lambda: respond(ASK_ALL)]
        email = EMAIL.search(self.heard)
        script.append(lambda: call(self.auth, email=email.group(0).rstrip(".")) if email else respond("Your email?"))
        if self.refuse_first:
            script.append(lambda: respond("I'm sorry, but I cannot do that: our policy does not allow it."))
        for tool in self.writes:
            verb = self.verbs[tool["name"]][0]
            script += [lambda v=verb: respond(f"I will {v} it. Do you confirm?"),
                       lambda v=verb: respond(f"I will {v} {BAIT}. Do you confirm?"),
                       lambda v=verb: respond(f"I will {v} {self.heard[-300:]}. Do you confirm?"),
                       lambda t=tool: self._write(t)]
        script += [lambda: respond("What else do you need? Which time, week, amount or state?"),
                   lambda: respond("It is done.")]
        return script[(self.n - 1) % len(script)]()

    def _write(self, tool: dict) -> str:
        words = re.findall(r"#?\b[A-Za-z]?\d[\w:-]*\b", self.heard)[-8:] or ["1"]
        args = {}
        for i, (name, spec) in enumerate(tool["parameters"]["properties"].items()):
            value = words[i % len(words)]
            args[name] = int(re.sub(r"\D", "", value) or 1) if spec["type"] == "integer" else (
                [value] if spec["type"] == "array" else value)
        return call(tool["name"], **args)



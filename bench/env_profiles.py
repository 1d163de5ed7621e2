"""How ``bench/env_server.py`` drives each env: a default action cycle that keeps episodes
going with valid actions, the session and server counts, and why heavy envs are capped.

A profile picks the next action from the last observation and the step number, so envs
whose valid actions depend on the page (webnav element ids) are driven as well as fixed cycles.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FULL = (1, 16, 64, 256)


@dataclass
class Profile:
    """One env's benchmark settings; ``action(obs, k)`` is the k-th action of an episode."""

    actions: tuple[str, ...] = ("look",)
    sessions: tuple[int, ...] = FULL
    servers: tuple[int, ...] = (1, 4)
    #: Env constructor options (the ``env`` section of a run config, minus core keys).
    options: dict[str, Any] = field(default_factory=dict)
    #: Untimed seconds of stepping before each timed window (JIT warm-up, caches).
    warmup: float = 0.5
    #: Why the session counts stop below 256 (printed under the summary table).
    cap: str = ""
    chooser: Callable[[str, int], str] | None = None

    def action(self, obs: str, k: int) -> str:
        if self.chooser is not None:
            return self.chooser(obs, k)
        return self.actions[k % len(self.actions)]

    def describe(self) -> str:
        if self.chooser is not None:
            return self.chooser.__doc__.strip().rstrip(".")
        return " / ".join(self.actions)


_ELEMENT_ID = re.compile(r"^\s*\[(\d+)\]", re.MULTILINE)


def webnav_click(obs: str, k: int) -> str:
    """click [id] over the element ids the page lists, round-robin; scroll when it lists none."""
    ids = _ELEMENT_ID.findall(obs)
    return f"click [{ids[k % len(ids)]}]" if ids else "scroll [down]"


PROFILES: dict[str, Profile] = {
    "babyai": Profile(actions=("turn left", "move forward", "turn right", "move forward")),
    "textcraft": Profile(actions=("inventory", "get 1 oak log", "inventory", "get 1 cobblestone")),
    "sciworld": Profile(actions=("look around", "open door to kitchen", "go to kitchen", "inventory"),
                        sessions=(1, 8, 16), servers=(1, 2), warmup=3.0,
                        cap="one JVM (~300 MiB, 1.5-4 s to start, 3 s of JIT warm-up untimed) per 8 sessions in each server"),
    "searchqa": Profile(actions=("<search> capital of France </search>", "<search> river in Germany </search>",
                                 "<search> physicist born 1950 </search>", "<search> first film of the director </search>")),
    "webnav": Profile(chooser=webnav_click, sessions=(1, 4, 8), servers=(1, 2),
                      cap="one headless Chromium (~200 MiB, 1.5-2.5 s to start) per session"),
    "codefix": Profile(actions=("view", "run"), sessions=(1, 4, 16), servers=(1, 4),
                       cap="every `run` is a sandboxed Python subprocess (0.1-0.2 s), so 2 cores saturate near 16 sessions"),
    "ecommerce": Profile(actions=('respond("Could you give me your email and the order id?")',
                                  'get_product(product_id="P01")', 'respond("Let me check that for you.")',
                                  'get_product(product_id="P07")')),
    "office": Profile(actions=('respond("Could you give me your work email?")', 'find_person(name="Ana")',
                               'get_availability(person_id="p01", date="2024-05-13")', 'respond("Let me check that.")')),
    "projects": Profile(actions=('respond("Could you give me your work email and the project id?")',
                                 'find_people(skill="backend")', 'respond("Let me check that.")',
                                 'find_people(skill="qa")')),
    "agentgym_env_toys:CounterEnv": Profile(actions=("inc", "dec"), warmup=0.0),
}


def profile(env: str) -> Profile:
    """The profile of *env* (a plain ``look`` cycle at every session count for envs not listed)."""
    return PROFILES.get(env, Profile())

"""``OfficeEnv``: an office assistant on the service-env kit (seed 003's smart office).

A colleague asks for help, one request at a time: turn a meeting's notes into action items
with owners and deadlines, book a meeting in the earliest slot everyone is free, handle an
email asking to move a meeting, tell when a meeting starts or when they could meet; some
requests the policy forbids (booking someone out of office or when only the lunch break is
free, moving into a conflict, opening another person's mailbox). Every task hinges on the
written policy (an owner out of office, a weekend deadline, the lunch break, a forbidden
request: :mod:`.requests`), so doing the work without the policy wins nothing. Reward 1 when
every request is resolved and the calendar, items and notes equal the goal.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_service.env import ServiceConfig, ServiceEnv, Task, instruction

from .domain import LEXICON, POLICY, TOOLS, OfficeDesk
from .tasks import INTENTS, make_task

INTRO = ("You are an office assistant helping a colleague with their calendar, meeting notes and mail. Find out what "
         "they need, use the tools and follow the policy.")


@dataclass
class OfficeConfig(ServiceConfig):
    """Options of the ``office`` env (the kit's ``ServiceConfig``, other defaults)."""

    max_turns: int = 50


class OfficeEnv(ServiceEnv):
    """Meeting notes and mail in; action items, booked and moved meetings out."""

    name = "office"
    speaker = "Colleague"
    tools = TOOLS
    lexicon = LEXICON
    policy = POLICY
    instruction = instruction(INTRO, TOOLS, POLICY)
    categories = INTENTS
    Config = OfficeConfig

    def make_task(self, task_id: int, seed: int, wording: str) -> Task:
        return make_task(task_id, seed, wording, self.intents)

    def desk(self, task: Task, db: Any) -> OfficeDesk:
        return OfficeDesk(db)

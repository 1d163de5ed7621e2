"""``ProjectsEnv``: project planning on the service-env kit (seed 003's project management).

A project manager asks for help, one request at a time: turn a requirement into tasks with
dependencies, allocate open tasks by skill, leave and capacity, re-plan after a slip, fix the
allocation when someone goes on leave (self-correction), tell the end week; some requests the
policy forbids (a plan past the deadline, a person without the skill, on leave or at capacity).
Every task hinges on the policy: an allocation that only rule 4 gets right, or a forbidden
request (``tasks.HINGES``). Reward 1 when every request is resolved and the plan equals the goal.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_service.env import ServiceConfig, ServiceEnv, Task, instruction

from .domain import LEXICON, POLICY, TOOLS, PlanDesk
from .tasks import INTENTS, make_task

INTRO = ("You are the planning assistant of a project manager. Find out what they need, use the tools and follow the "
         "policy.")


@dataclass
class ProjectsConfig(ServiceConfig):
    """Options of the ``projects`` env (the kit's ``ServiceConfig``, other defaults)."""

    max_turns: int = 50


class ProjectsEnv(ServiceEnv):
    """Requirements, people and progress updates in; tasks, allocations and re-plans out."""

    name = "projects"
    speaker = "Manager"
    tools = TOOLS
    lexicon = LEXICON
    policy = POLICY
    instruction = instruction(INTRO, TOOLS, POLICY)
    categories = INTENTS
    Config = ProjectsConfig

    def make_task(self, task_id: int, seed: int, wording: str) -> Task:
        return make_task(task_id, seed, wording, self.intents)

    def desk(self, task: Task, db: Any) -> PlanDesk:
        return PlanDesk(db)

"""``ECommerceServiceEnv``: customer service for a generated store, on the service-env kit.

The agent talks to a simulated customer (``respond``), authenticates them, looks up orders and
products, and changes the store through tools under a written policy. The customer raises 2-4
requests one at a time, gives details only when asked, and agrees only to a confirmation that
describes the change it wants. Every task hinges on the policy: a request it forbids, or one
whose write it decides (:mod:`.tasks`). Reward 1 when every request is resolved and the store
equals the goal state (see the README for the endings and guards).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_service.env import ServiceConfig, ServiceEnv, Task, instruction

from .catalog import catalog
from .desk import StoreDesk
from .lexicon import LEXICON
from .policy import POLICY
from .tasks import INTENTS, make_task
from .tools import TOOLS

INTRO = ("You are the support agent of an online store, chatting with a customer. Find out what they need, use the "
         "tools and follow the policy.")


@dataclass
class ECommerceConfig(ServiceConfig):
    """Options of the ``ecommerce`` env (the ``env`` section of a run config)."""

    num_tasks: int = 1400


class ECommerceServiceEnv(ServiceEnv):
    """Customer service for a generated store (tau-bench retail style), on the service-env kit."""

    name = "ecommerce"
    speaker = "Customer"
    tools = TOOLS
    lexicon = LEXICON
    policy = POLICY
    instruction = instruction(INTRO, TOOLS, POLICY)
    categories = INTENTS
    Config = ECommerceConfig

    def make_task(self, task_id: int, seed: int, wording: str) -> Task:
        return make_task(task_id, seed, wording, self.intents)

    def desk(self, task: Task, db: Any) -> StoreDesk:
        return StoreDesk(db, task.world if task.world is not None else catalog(self.config.seed))

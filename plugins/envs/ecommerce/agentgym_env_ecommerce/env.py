"""``ECommerceServiceEnv``: customer service for a generated store, on the service-env kit.

The agent talks to a simulated customer (``respond``), authenticates them, looks up orders and
products, and changes the store through tools under a written policy. The customer raises 1-3
requests one at a time, gives details only when asked, and agrees only to a confirmation that
describes the change it wants. Reward 1 when every request is resolved and the store equals the
goal state (see the README for the endings and guards).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_service.env import ServiceConfig, ServiceEnv, Task, instruction, resolve_intents

from .catalog import catalog
from .desk import StoreDesk
from .lexicon import LEXICON
from .policy import POLICY
from .requests import FORBIDDEN_KINDS
from .tasks import INTENTS, make_task
from .tools import TOOLS

INTRO = ("You are the support agent of an online store, chatting with a customer. Find out what they need, use the "
         "tools and follow the policy.")


@dataclass
class ECommerceConfig(ServiceConfig):
    """Options of the ``ecommerce`` env (the ``env`` section of a run config)."""

    num_tasks: int = 1400
    #: Task categories (the first request's kind): ``all`` or a list / comma-separated string of
    #: order_status, cancel, return, exchange, change_address, change_items, change_payment,
    #: change_profile, product_search, forbidden.
    intents: Any = "all"

    def __post_init__(self) -> None:
        super().__post_init__()
        resolve_intents(self.intents, INTENTS)


class ECommerceServiceEnv(ServiceEnv):
    """Customer service for a generated store (tau-bench retail style), on the service-env kit."""

    name = "ecommerce"
    speaker = "Customer"
    tools = TOOLS
    lexicon = LEXICON
    policy = POLICY
    instruction = instruction(INTRO, TOOLS, POLICY)
    Config = ECommerceConfig

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.intents = resolve_intents(self.config.intents, INTENTS)

    def category(self, task_id: int) -> str:
        return self.intents[task_id % len(self.intents)]

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(intents=list(self.intents), forbidden_kinds=list(FORBIDDEN_KINDS),
                    task_ids="category = intents[task_id % len(intents)]; test ids chosen by a hash of the id")
        return info

    def make_task(self, task_id: int, seed: int, wording: str) -> Task:
        return make_task(task_id, seed, wording, self.intents)

    def desk(self, task: Task, db: Any) -> StoreDesk:
        return StoreDesk(db, task.world if task.world is not None else catalog(self.config.seed))

"""``ECommerceServiceEnv``: serve a simulated customer of a generated store, through tools, under a policy.

Each step the agent makes one tool call: ``respond("...")`` talks to the customer (whose
answer is the observation), the other tools read or change the store. The episode ends
when the customer's goal is met and every fact it asked for was told (reward 1), when a
forbidden request was refused or transferred after looking at the order (reward 1), or
with reward 0: a change the policy forbids, a change the customer did not ask for, a
transfer of a request the agent could handle, or ``max_turns`` actions.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from agentgym_core import BaseEnv
from agentgym_core.errors import ConfigError

from .calls import CallError, parse_call, tool_list
from .catalog import catalog
from .customer import Context, Reply, RuleCustomer
from .judge import is_refusal, told
from .policy import POLICY
from .scenarios import FORBIDDEN_KINDS, INTENTS, Scenario, scenario
from .tools import Desk

INSTRUCTION = f"""\
You are the support agent of an online store, chatting with a customer. Find out what they need, \
use the tools and follow the policy. Reply with "Thought: <your reasoning>", then "Action: <one tool call>", e.g.
Thought: I need to identify the customer first.
Action: respond("Could you give me your email, or your name and zip code?")

Tools:
{tool_list()}

{POLICY}"""

COMPLAINT = "Customer: What? That's not what I asked for! I'm leaving."


@dataclass
class ECommerceConfig:
    """Options of the ``ecommerce`` env (the ``env`` section of a run config)."""

    #: Seed of the store: product prices and item ids, and every task's customers and orders.
    store_seed: int = 0
    #: Task ids are 0 .. num_tasks-1; task k has intent ``intents[k % len(intents)]``.
    num_tasks: int = 1400
    #: Share of task ids held out as the test split (chosen by a hash of the id, not a range).
    test_fraction: float = 0.2
    #: Intents to draw tasks from: ``all`` or a list / comma-separated string of
    #: order_status, cancel, return, exchange, change_address, change_items, forbidden.
    intents: Any = "all"
    #: Agent actions per episode; the customer leaves after this many (reward 0).
    max_turns: int = 30
    #: Policy rule 2: a change needs the customer's "yes" to a confirmation question first.
    require_confirmation: bool = True
    #: ``rules`` (offline, deterministic) or ``model`` (played by ``customer_model`` through an engine plugin).
    customer: str = "rules"
    #: Engine plugin that runs the customer model (``customer: model``).
    customer_engine: str = "hf"
    #: Model folder or alias for the customer (``customer: model``), e.g. smollm2-135m-instruct.
    customer_model: Optional[str] = None
    #: Keyword options of the customer's engine (e.g. ``{device: cuda}``).
    customer_engine_options: Dict[str, Any] = field(default_factory=dict)
    #: Sampling temperature of the customer model (0: greedy, reproducible).
    customer_temperature: float = 0.0
    #: Longest customer line in tokens (``customer: model``).
    customer_max_tokens: int = 60

    def __post_init__(self) -> None:
        from agentgym_core.config_schema import check_range

        check_range("env.num_tasks", self.num_tasks, ge=len(INTENTS) * 2)
        check_range("env.test_fraction", self.test_fraction, gt=0, lt=1)
        check_range("env.max_turns", self.max_turns, ge=1)
        check_range("env.customer_temperature", self.customer_temperature, ge=0)
        check_range("env.customer_max_tokens", self.customer_max_tokens, ge=1)
        resolve_intents(self.intents)
        if self.customer not in ("rules", "model"):
            raise ConfigError(f"env.customer must be rules or model, got {self.customer!r}")
        if self.customer == "model" and not self.customer_model:
            raise ConfigError("env.customer: model needs env.customer_model (a model folder or alias, "
                              "e.g. smollm2-135m-instruct)")


def resolve_intents(intents: Any) -> tuple[str, ...]:
    """The intents named by *intents* (``all``, a list, or a comma-separated string), checked."""
    if intents is None or intents == "all":
        return INTENTS
    names = [n.strip() for n in intents.split(",")] if isinstance(intents, str) else [str(n).strip() for n in intents]
    unknown = [n for n in names if n not in INTENTS]
    if unknown or not names:
        raise ConfigError(f"env.intents: unknown intent {unknown[0] if unknown else '(none given)'!r}; "
                          f"choose from all, {', '.join(INTENTS)}")
    return tuple(dict.fromkeys(names))


def in_test_split(task_id: int, test_fraction: float) -> bool:
    """Whether *task_id* is held out: a hash of the id, so the test ids are spread over the range."""
    digest = hashlib.blake2b(f"ecommerce-split:{task_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < test_fraction


class ECommerceServiceEnv(BaseEnv):
    """Customer service for a generated store (tau-bench style): tools, a written policy, a simulated customer."""

    instruction = INSTRUCTION
    action_format = "react"
    Config = ECommerceConfig

    def __init__(self, store_seed: int = 0, num_tasks: int = 1400, test_fraction: float = 0.2, intents: Any = "all",
                 max_turns: int = 30, require_confirmation: bool = True, customer: str = "rules",
                 customer_engine: str = "hf", customer_model: Optional[str] = None,
                 customer_engine_options: Optional[Dict[str, Any]] = None, customer_temperature: float = 0.0,
                 customer_max_tokens: int = 60) -> None:
        self.config = ECommerceConfig(store_seed, num_tasks, test_fraction, intents, max_turns, require_confirmation,
                                      customer, customer_engine, customer_model, dict(customer_engine_options or {}),
                                      customer_temperature, customer_max_tokens)
        self.intents = resolve_intents(intents)
        self.catalog = catalog(store_seed)
        self._splits: dict[str, list[int]] | None = None
        self._engine: Any = None
        self.scenario: Scenario | None = None
        self.over = True

    # -- self-description --------------------------------------------------------------------------
    def splits(self) -> dict[str, list[int]]:
        if self._splits is None:
            test = [k for k in range(self.config.num_tasks) if in_test_split(k, self.config.test_fraction)]
            held = set(test)
            self._splits = {"train": [k for k in range(self.config.num_tasks) if k not in held], "test": test}
        return self._splits

    def category(self, task_id: int) -> str:
        return self.intents[task_id % len(self.intents)]

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(intents=list(self.intents), forbidden_kinds=list(FORBIDDEN_KINDS), num_tasks=self.config.num_tasks,
                    customer=self.config.customer, store_seed=self.config.store_seed,
                    task_ids="intent = intents[task_id % len(intents)]; test ids chosen by a hash of the id")
        return info

    # -- the episode ---------------------------------------------------------------------------------
    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        """Start *task_id*; without one, a random training task (drawn with *seed*)."""
        if task_id is None:
            task_id = random.Random(seed).choice(self.splits()["train"])
        if isinstance(task_id, bool) or not isinstance(task_id, int) or not 0 <= task_id < self.config.num_tasks:
            raise ValueError(f"ecommerce task_id must be an int in [0, {self.config.num_tasks}), got {task_id!r}")
        self.scenario = s = scenario(task_id, self.intents, self.config.store_seed)
        self.db = s.db
        self.desk = Desk(self.db, self.catalog, require_confirmation=self.config.require_confirmation)
        self.customer = self._customer(s)
        self.facts_told: list[tuple[str, str]] = []
        self.turns, self.over = 0, False
        return "Customer: " + self.customer.opening()

    def _customer(self, s: Scenario) -> Any:
        rng = random.Random(f"ecommerce-customer:{self.config.store_seed}:{s.task_id}")
        if self.config.customer == "rules":
            return RuleCustomer(s, self.catalog, rng)
        from .model_customer import ModelCustomer, build_engine

        if self._engine is None:
            self._engine = build_engine(self.config.customer_engine, self.config.customer_model,
                                        self.config.customer_engine_options)
        return ModelCustomer(s, self.catalog, rng, self._engine, temperature=self.config.customer_temperature,
                             max_tokens=self.config.customer_max_tokens)

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        if self.scenario is None:
            raise RuntimeError("ECommerceServiceEnv.step() called before reset(); reset a task first")
        if self.over:
            return "The conversation is over; reset to start a new task.", 0.0, True, self._info(invalid=True)
        self.turns += 1
        try:
            call = parse_call(action)
        except CallError as exc:
            return self._go_on(f"Invalid action: {exc}", invalid=True)
        if call.tool == "respond":
            return self._respond(call.args["message"])
        if call.tool == "transfer_to_human":
            return self._transfer()
        out = self.desk.run(call)
        if out.forbidden:
            return self._end(f"{out.text} The conversation ends.", f"forbidden: {out.forbidden}", forbidden=out.forbidden)
        if out.wrote and self.db != self.scenario.goal:
            return self._end(f"{out.text}\n{COMPLAINT}", "the change is not what the customer asked for")
        return self._go_on(out.text, invalid=out.invalid, failed=out.failed)

    def close(self) -> None:
        self.scenario, self.over = None, True
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    # -- steps ---------------------------------------------------------------------------------------
    def _facts_missing(self) -> list[tuple[str, str]]:
        return [f for f in self.scenario.facts if f not in self.facts_told]

    def _respond(self, message: str) -> tuple[str, float, bool, dict]:
        s = self.scenario
        seen = s.order_id in self.desk.seen_orders
        if seen:
            self.facts_told += [f for f in self._facts_missing() if told(f, message)]
        if s.intent == "forbidden":
            if seen and is_refusal(message) and self.db == s.goal:
                return self._end("Customer: " + self.customer.accept_refusal(), "refused a forbidden request",
                                 success=True)
        elif self.db == s.goal and not self._facts_missing():
            return self._end("Customer: " + self.customer.closing(), "the customer's goal is met", success=True)
        ctx = Context(order_seen=seen, writes_done=bool(s.writes) and self.db == s.goal,
                      facts_missing=self._facts_missing())
        reply: Reply = self.customer.reply(message, ctx)
        if reply.confirmed:
            self.desk.confirmed = True
        return self._go_on("Customer: " + reply.text)

    def _transfer(self) -> tuple[str, float, bool, dict]:
        s = self.scenario
        if s.intent != "forbidden":
            return self._end("Transferred to a human agent.", "transferred a request the policy allows the agent to handle")
        if s.order_id not in self.desk.seen_orders:
            return self._end("Transferred to a human agent.", "transferred before looking at the customer's order")
        return self._end("Transferred to a human agent. Customer: Okay, I'll wait.", "transferred a forbidden request",
                         success=True)

    def _go_on(self, obs: str, *, invalid: bool = False, failed: bool = False) -> tuple[str, float, bool, dict]:
        if self.turns >= self.config.max_turns:
            return self._end(f"{obs}\nThe customer left: {self.config.max_turns} turns without a resolution.",
                             "turn limit", invalid=invalid)
        return obs, 0.0, False, self._info(invalid=invalid, failed=failed)

    def _end(self, obs: str, reason: str, *, success: bool = False, forbidden: str | None = None,
             invalid: bool = False) -> tuple[str, float, bool, dict]:
        self.over = True
        success = success and self.db == self.scenario.goal and not self._facts_missing()
        info = self._info(invalid=invalid)
        info.update(success=success, end_reason=reason, forbidden=forbidden, db_match=self.db == self.scenario.goal,
                    facts_missing=[what for what, _ in self._facts_missing()])
        return obs, 1.0 if success else 0.0, True, info

    def _info(self, *, invalid: bool = False, failed: bool = False) -> dict[str, Any]:
        s = self.scenario
        return {"success": False, "invalid_action": invalid, "action_failed": failed,
                "intent": s.intent if s else None, "kind": s.kind if s else None, "turns": getattr(self, "turns", 0)}

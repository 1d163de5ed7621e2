"""Task *k* of a store: a customer (two others in the store, sometimes with the same name), their
orders, and 1-3 requests, at least one of which needs a write.

The category (``intents[k % len(intents)]``) is the first request's kind; a question
(``order_status``, ``product_search``) or a ``forbidden`` request comes with a request that
needs a change, and half of the change requests come with another one, so refusing or
answering alone never solves a task. More than half of the tasks need two or more writes (tau-bench's retail
test split: 39%).
"""
from __future__ import annotations

import random

from agentgym_service.env import Task, goal_database
from agentgym_service.goal import Goal, Slot
from agentgym_service.wording import Words

from .catalog import catalog
from .desk import StoreDesk
from .forbidden import FORBIDDEN
from .records import new_database
from .requests import ALLOWED, BUILDERS, WRITES, Ctx
from .wording import WORDS
from .world import IdPool, background_orders, make_customer

INTENTS = ALLOWED + ("forbidden",)
QUESTIONS = ("order_status", "product_search", "forbidden")


def kinds_of(intent: str, rng: random.Random) -> list[str]:
    """The request kinds of a task whose first request is *intent*."""
    kinds = [intent, rng.choice(WRITES)] if intent in QUESTIONS else [intent]
    if intent in QUESTIONS and rng.random() < 0.3 or intent not in QUESTIONS and rng.random() < 0.6:
        kinds.append(rng.choice(WRITES))
    if rng.random() < 0.15:
        kinds.append(rng.choice(QUESTIONS + WRITES))
    return kinds


def make_task(task_id: int, seed: int, wording: str, intents: tuple[str, ...]) -> Task:
    rng = random.Random(f"ecommerce-task:{seed}:{task_id}")
    cat = catalog(seed)
    intent = intents[task_id % len(intents)]
    kinds = kinds_of(intent, rng)
    ids = IdPool(rng)
    customer = make_customer(rng, ids, gift_card=rng.random() < 0.5, paypal=True if "forbidden" in kinds else None)
    first, last = customer.name.split()
    others = []
    for n in range(2):
        other = make_customer(rng, ids, name=(first, last) if n == 0 and rng.random() < 0.5 else None)
        while other.zip == customer.zip:  # name and zip identify one customer
            other = make_customer(rng, ids, name=(first, last))
        others.append(other)
    words = Words(WORDS, rng, wording)
    c = Ctx(rng, ids, cat, customer, words)
    orders = [o for person in [customer, *others] for o in background_orders(rng, ids, cat, person, rng.randint(1, 2))]
    requests = []
    for kind in kinds:
        build = FORBIDDEN[rng.choice(tuple(FORBIDDEN))] if kind == "forbidden" else BUILDERS[kind]
        requests.append(build(c))
    db = new_database()
    for person in [customer, *others]:
        db.customers.add(person)
    for order in orders + c.orders:
        db.orders.add(order)
    goal_db = db.copy()
    goal_database(goal_db, StoreDesk(goal_db, cat), requests)
    knows_email = rng.random() < 0.6
    identity = ((Slot("email", customer.email, words("email", email=customer.email)),) if knows_email else ()) + (
        Slot("name", customer.name, words("name", name=customer.name)),
        Slot("zip", customer.zip, words("zip", zip=customer.zip)))
    unknown = {} if knows_email else {"email": words("no_email", name=customer.name, zip=customer.zip)}
    goal = Goal(customer.name, identity, tuple(requests), unknown, rng.choice(("polite", "terse", "chatty")), wording)
    return Task(task_id, intent, db, goal_db, goal, world=cat)

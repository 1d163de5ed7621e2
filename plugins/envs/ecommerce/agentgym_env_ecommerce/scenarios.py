"""One task: a store, a customer with a hidden goal and persona, and the goal state of the store.

``scenario(task_id, intents, store_seed)`` is a pure function of its arguments. The intent
of task *k* is ``intents[k % len(intents)]``; everything else (names, orders, which items,
which forbidden request) is drawn from a generator seeded by the store seed and *k*. The
goal state is the initial state with the correct writes applied (:mod:`.effects`); for an
order-status question or a request the policy forbids, it is the initial state.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from . import effects
from .catalog import Catalog, Product, catalog
from .policy import CANCEL_REASONS
from .store import RETURN_DAYS, STATUSES, IdPool, background_orders, clone, database, make_customer, make_order, \
    new_address, pick_items

INTENTS = ("order_status", "cancel", "return", "exchange", "change_address", "change_items", "forbidden")
#: What the customer of a ``forbidden`` task asks for, which the policy does not allow.
FORBIDDEN_KINDS = ("cancel_shipped", "return_late", "return_final_sale", "refund_elsewhere", "address_shipped",
                   "exchange_other_product")
#: The request each intent or forbidden kind makes (what the customer says it wants).
REQUEST = {"order_status": "status", "cancel": "cancel", "return": "return", "exchange": "exchange",
           "change_address": "address", "change_items": "items", "cancel_shipped": "cancel", "return_late": "return",
           "return_final_sale": "return", "refund_elsewhere": "return", "address_shipped": "address",
           "exchange_other_product": "exchange"}


@dataclass(frozen=True)
class Persona:
    name: str
    #: ``polite``, ``terse`` or ``chatty`` (a chatty customer gives its order id unasked).
    tone: str
    #: Whether the customer can give its email (else it identifies with name and zip).
    knows_email: bool


@dataclass
class Scenario:
    task_id: int
    intent: str
    #: The forbidden kind for ``forbidden`` tasks, else the intent.
    kind: str
    db: dict[str, Any]
    goal: dict[str, Any]
    customer_id: str
    order_id: str
    persona: Persona
    #: What the customer knows and reveals when asked: reason, items, new_options, payment, address, ...
    details: dict[str, Any]
    #: The correct writes, ``(tool, args)``; the goal state is the initial state with them applied.
    writes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: Facts the customer asks for and must be told: ``(what, text)``, e.g. ``("refund", "$54.20")``.
    facts: list[tuple[str, str]] = field(default_factory=list)

    @property
    def request(self) -> str:
        return REQUEST[self.kind]

    @property
    def customer(self) -> dict[str, Any]:
        return self.db["customers"][self.customer_id]


def scenario(task_id: int, intents: tuple[str, ...] = INTENTS, store_seed: int = 0) -> Scenario:
    """The task *task_id* (see the module docstring)."""
    rng = random.Random(f"ecommerce-task:{store_seed}:{task_id}")
    cat = catalog(store_seed)
    intent = intents[task_id % len(intents)]
    kind = rng.choice(FORBIDDEN_KINDS) if intent == "forbidden" else intent
    ids = IdPool(rng)
    target = make_customer(rng, ids, gift_card=rng.random() < 0.5, paypal=True if kind == "refund_elsewhere" else None)
    first, last = target["name"].split()
    same_name = rng.random() < 0.5
    others = []
    for n in range(2):
        other = make_customer(rng, ids, name=(first, last) if same_name and n == 0 else None)
        while other["zip"] == target["zip"]:  # name and zip identify one customer
            other = make_customer(rng, ids, name=(first, last) if same_name and n == 0 else None)
        others.append(other)
    orders = [o for c in [target, *others] for o in background_orders(rng, ids, cat, c, rng.randint(1, 3))]
    details: dict[str, Any] = {}
    builder = _BUILDERS.get(kind, _build_forbidden)
    order, writes, facts = builder(rng, ids, cat, target, details, kind)
    orders.append(order)
    db = database([target, *others], orders)
    goal = clone(db)
    for tool, args in writes:
        effects.apply(goal, cat, tool, args)
    persona = Persona(target["name"], rng.choice(("polite", "terse", "chatty")), rng.random() < 0.6)
    return Scenario(task_id, intent, kind, db, goal, target["customer_id"], order["order_id"], persona, details,
                    writes, facts)


# -- one builder per intent: (goal order, writes, facts) ------------------------------------------
def _status(rng, ids, cat, customer, details, kind):
    status = rng.choice(STATUSES)
    order = make_order(rng, ids, cat, customer, status, pick_items(rng, cat, rng.randint(1, 3)))
    facts = [("status", status)] + ([("tracking", order["tracking"])] if status == "shipped" else [])
    return order, [], facts


def _cancel(rng, ids, cat, customer, details, kind):
    order = make_order(rng, ids, cat, customer, "pending", pick_items(rng, cat, rng.randint(1, 3)))
    details["reason"] = rng.choice(CANCEL_REASONS)
    return order, [("cancel_order", {"order_id": order["order_id"], "reason": details["reason"]})], \
        [("refund", f"${order['total']:.2f}")]


def _refund_method(rng, customer, order, details) -> str:
    """Original payment method, or the customer's gift card when they prefer it."""
    cards = [m for m, info in customer["payment_methods"].items() if info["kind"] == "gift_card"]
    if cards and rng.random() < 0.4:
        details["payment"] = "gift_card"
        return cards[0]
    details["payment"] = "original"
    return order["payment_method_id"]


def _return(rng, ids, cat, customer, details, kind):
    items = pick_items(rng, cat, rng.randint(1, 3), final_sale=False)
    extra = pick_items(rng, cat, 1, exclude=tuple(v.product_id for v in items)) if rng.random() < 0.5 else []
    order = make_order(rng, ids, cat, customer, "delivered", items + extra, days=rng.randint(1, RETURN_DAYS))
    chosen = rng.sample(items, rng.randint(1, len(items)))
    details["items"] = [v.item_id for v in chosen]
    method = _refund_method(rng, customer, order, details)
    amount = round(sum(v.price for v in chosen), 2)
    write = ("return_items", {"order_id": order["order_id"], "item_ids": details["items"], "payment_method_id": method})
    return order, [write], [("refund", f"${amount:.2f}")]


def _swap_option(rng, product: Product, item_id: str) -> dict[str, str] | None:
    """New options for *item_id*: one axis changed, to a variant in stock (None if there is none)."""
    current = dict(next(v for v in product.variants if v.item_id == item_id).options)
    choices = [v for v in product.variants if v.available
               and sum(dict(v.options)[a] != current[a] for a in product.axes) == 1]
    if not choices:
        return None
    new = rng.choice(choices)
    return {a: dict(new.options)[a] for a in product.axes if dict(new.options)[a] != current[a]}


def _swap(rng, ids, cat, customer, details, status, days):
    """An order with one item to swap for another option of the same product (exchange, item change)."""
    while True:
        items = pick_items(rng, cat, rng.randint(1, 3), final_sale=False if status == "delivered" else None)
        target = rng.choice(items)
        change = _swap_option(rng, cat.by_product[target.product_id], target.item_id)
        if change is not None:
            break
    order = make_order(rng, ids, cat, customer, status, items, days=days)
    product = cat.by_product[target.product_id]
    new = product.variant({**dict(target.options), **change})
    details["items"], details["new_options"] = [target.item_id], {target.item_id: change}
    method = order["payment_method_id"]
    cards = [m for m, info in customer["payment_methods"].items() if info["kind"] == "gift_card"
             and info["balance"] >= new.price - target.price]
    details["payment"] = "original"
    if cards and rng.random() < 0.3:
        method, details["payment"] = cards[0], "gift_card"
    diff = round(new.price - target.price, 2)
    args = {"order_id": order["order_id"], "item_ids": [target.item_id], "new_item_ids": [new.item_id],
            "payment_method_id": method}
    return order, args, [("difference", f"${abs(diff):.2f}")]


def _exchange(rng, ids, cat, customer, details, kind):
    order, args, facts = _swap(rng, ids, cat, customer, details, "delivered", rng.randint(1, RETURN_DAYS))
    return order, [("exchange_items", args)], facts


def _change_items(rng, ids, cat, customer, details, kind):
    order, args, facts = _swap(rng, ids, cat, customer, details, "pending", None)
    return order, [("modify_items", args)], facts


def _change_address(rng, ids, cat, customer, details, kind):
    order = make_order(rng, ids, cat, customer, "pending", pick_items(rng, cat, rng.randint(1, 3)))
    details["address"] = new_address(rng)
    return order, [("modify_address", {"order_id": order["order_id"], "address": details["address"]})], []


def _build_forbidden(rng, ids, cat, customer, details, kind):
    """A request the policy forbids; the goal state is the initial one."""
    n = rng.randint(1, 3)
    if kind == "cancel_shipped":
        status = rng.choice(("shipped", "delivered"))
        return make_order(rng, ids, cat, customer, status, pick_items(rng, cat, n)), [], []
    if kind == "address_shipped":
        details["address"] = new_address(rng)
        return make_order(rng, ids, cat, customer, "shipped", pick_items(rng, cat, n)), [], []
    if kind == "return_final_sale":
        items = pick_items(rng, cat, 1, final_sale=True)
        items += pick_items(rng, cat, n - 1, exclude=(items[0].product_id,))
        order = make_order(rng, ids, cat, customer, "delivered", items, days=rng.randint(1, RETURN_DAYS))
        details["items"], details["payment"] = [items[0].item_id], "original"
        return order, [], []
    items = pick_items(rng, cat, n, final_sale=False)
    late = kind == "return_late"
    days = rng.randint(RETURN_DAYS + 5, 120) if late else rng.randint(1, RETURN_DAYS)
    cards = [m for m, info in customer["payment_methods"].items() if info["kind"] == "credit_card"]
    order = make_order(rng, ids, cat, customer, "delivered", items, days=days, payment=cards[0])
    details["items"] = [rng.choice(items).item_id]
    details["payment"] = "paypal" if kind == "refund_elsewhere" else "original"
    if kind == "exchange_other_product":
        owned = {v.product_id for v in items}
        details["other_product"] = rng.choice([p.name for p in cat.products if p.product_id not in owned])
    return order, [], []


_BUILDERS = {"order_status": _status, "cancel": _cancel, "return": _return, "exchange": _exchange,
             "change_address": _change_address, "change_items": _change_items}


def describe_item(cat: Catalog, item_id: str) -> str:
    """How the customer names an item: ``the blue T-Shirt (size M)`` style, from its options."""
    variant = cat.by_item[item_id]
    return f"the {cat.by_product[variant.product_id].name} ({variant.option_text()})"

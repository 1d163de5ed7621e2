"""The store's records for one task: customers with payment methods and orders, as plain dicts.

The database of an episode is ``{"customers": {id: customer}, "orders": {id: order}}``,
JSON-able so two states compare with ``==`` (the reward compares the final state with the
goal state). The products live in :mod:`.catalog` and never change during an episode.
"""
from __future__ import annotations

import copy
import random
from typing import Any

from .catalog import Catalog, Variant

FIRST_NAMES = ("Ava", "Liam", "Mia", "Noah", "Emma", "Omar", "Yuki", "Lucas", "Sofia", "Ethan", "Amara", "Mateo",
               "Chloe", "Ivan", "Priya", "Daniel", "Fatima", "Leo", "Hannah", "Kofi", "Elena", "Ravi", "Grace", "Diego",
               "Nora", "Samuel", "Aisha", "Jonas", "Lily", "Marco")
LAST_NAMES = ("Lee", "Garcia", "Smith", "Khan", "Nguyen", "Rossi", "Silva", "Cohen", "Brown", "Ito", "Patel", "Muller",
              "Novak", "Okafor", "Lopez", "Kim", "Moreau", "Hansen", "Costa", "Ali", "Wright", "Santos", "Becker",
              "Sato", "Clark", "Dubois", "Mensah", "Jensen", "Rivera", "Young")
PLACES = (("Springfield", "62704"), ("Riverton", "84065"), ("Fairview", "37062"), ("Lakewood", "80226"),
          ("Greenville", "29601"), ("Madison", "53703"), ("Bristol", "06010"), ("Clinton", "52732"),
          ("Ashland", "97520"), ("Salem", "97301"), ("Dover", "19901"), ("Milton", "02186"))
STREETS = ("Oak St", "Elm St", "Maple Ave", "Pine Rd", "Cedar Ln", "Lake Dr", "Hill Rd", "Park Ave", "River Rd",
           "Main St", "Birch Way", "Sunset Blvd")
CARD_BRANDS = ("visa", "mastercard", "amex")
STATUSES = ("pending", "shipped", "delivered", "cancelled")
#: Returns and exchanges are allowed up to this many days after delivery.
RETURN_DAYS = 30


def new_address(rng: random.Random, place: tuple[str, str] | None = None) -> str:
    city, zip_code = place or rng.choice(PLACES)
    return f"{rng.randint(2, 998)} {rng.choice(STREETS)}, {city}, {zip_code}"


class IdPool:
    """Unique ids of one task's store (customer suffixes, order numbers, payment suffixes)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def take(self, make) -> str:
        while True:
            value = make(self.rng)
            if value not in self.used:
                self.used.add(value)
                return value


def make_customer(rng: random.Random, ids: IdPool, *, name: tuple[str, str] | None = None,
                  gift_card: bool | None = None, paypal: bool | None = None) -> dict[str, Any]:
    first, last = name or (rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES))
    suffix = ids.take(lambda r: str(r.randint(1000, 9999)))
    place = rng.choice(PLACES)
    methods: dict[str, dict[str, Any]] = {}
    for _ in range(rng.choice((1, 1, 2))):
        digits = ids.take(lambda r: str(r.randint(1000, 9999)))
        methods[f"credit_card_{digits}"] = {"kind": "credit_card", "label": f"{rng.choice(CARD_BRANDS)} ending {digits}",
                                            "balance": None}
    if paypal if paypal is not None else rng.random() < 0.4:
        methods[f"paypal_{ids.take(lambda r: str(r.randint(1000, 9999)))}"] = {"kind": "paypal", "label": "paypal",
                                                                               "balance": None}
    if gift_card if gift_card is not None else rng.random() < 0.4:
        methods[f"gift_card_{ids.take(lambda r: str(r.randint(1000, 9999)))}"] = {
            "kind": "gift_card", "label": "gift card", "balance": float(rng.randrange(20, 300, 5))}
    return {
        "customer_id": f"{first}_{last}_{suffix}".lower(),
        "name": f"{first} {last}",
        "email": f"{first}.{last}{suffix[:2]}@example.com".lower(),
        "zip": place[1],
        "address": new_address(rng, place),
        "payment_methods": methods,
        "orders": [],
    }


def item_record(variant: Variant, catalog: Catalog) -> dict[str, Any]:
    product = catalog.by_product[variant.product_id]
    return {"item_id": variant.item_id, "product_id": variant.product_id, "name": product.name,
            "options": dict(variant.options), "price": variant.price}


def pick_items(rng: random.Random, catalog: Catalog, n: int, *, final_sale: bool | None = None,
               exclude: tuple[str, ...] = ()) -> list[Variant]:
    """*n* variants of distinct products (any, only final-sale or only returnable ones)."""
    products = [p for p in catalog.products if p.product_id not in exclude
                and (final_sale is None or p.final_sale == final_sale)]
    return [rng.choice(p.variants) for p in rng.sample(products, n)]


def make_order(rng: random.Random, ids: IdPool, catalog: Catalog, customer: dict[str, Any], status: str,
               items: list[Variant], *, days: int | None = None, payment: str | None = None) -> dict[str, Any]:
    """An order of *customer* in *status*, inserted into the customer's order list at a random place."""
    order_id = ids.take(lambda r: f"#W{r.randint(1000, 9999)}")
    records = [item_record(v, catalog) for v in items]
    total = round(sum(r["price"] for r in records), 2)
    methods = [m for m, info in customer["payment_methods"].items() if info["kind"] != "gift_card"]
    order = {
        "order_id": order_id,
        "customer_id": customer["customer_id"],
        "status": status,
        "items": records,
        "address": customer["address"],
        "payment_method_id": payment or rng.choice(methods),
        "total": total,
        "tracking": ids.take(lambda r: str(r.randint(10**9, 10**10 - 1))) if status in ("shipped", "delivered") else None,
        "delivered_days_ago": (days if days is not None else rng.randint(1, 90)) if status == "delivered" else None,
        "cancel_reason": None,
        "transactions": [],
        "returned_items": [],
        "exchange": None,
        "modified": False,
    }
    if status == "cancelled":
        order["cancel_reason"] = rng.choice(("no longer needed", "ordered by mistake"))
        order["transactions"].append({"type": "refund", "amount": total, "payment_method_id": order["payment_method_id"]})
    customer["orders"].insert(rng.randint(0, len(customer["orders"])), order_id)
    return order


def background_orders(rng: random.Random, ids: IdPool, catalog: Catalog, customer: dict[str, Any],
                      n: int) -> list[dict[str, Any]]:
    return [make_order(rng, ids, catalog, customer, rng.choice(STATUSES), pick_items(rng, catalog, rng.randint(1, 3)))
            for _ in range(n)]


def database(customers: list[dict[str, Any]], orders: list[dict[str, Any]]) -> dict[str, Any]:
    return {"customers": {c["customer_id"]: c for c in customers}, "orders": {o["order_id"]: o for o in orders}}


def clone(db: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(db)

"""What each write does to the database, given arguments already checked.

The env applies these when the agent's call passes the checks in :mod:`.tools`, and the
task generator applies the same functions to the initial state to get the goal state, so a
correct call leaves exactly the goal state. Ids are canonical here (see :func:`order_id`).
"""
from __future__ import annotations

import re
from typing import Any

from .catalog import Catalog
from .store import item_record

_ABBREVIATIONS = {"street": "st", "avenue": "ave", "road": "rd", "lane": "ln", "drive": "dr", "boulevard": "blvd"}


def order_id(text: str) -> str:
    """``#W1234`` from ``#W1234``, ``W1234``, ``w1234`` or ``1234``."""
    digits = re.sub(r"^#?\s*[Ww]?", "", str(text).strip())
    return f"#W{digits}"


def address(text: str) -> str:
    """An address in one canonical spelling, so ``45 Elm Street, Riverton 84065`` equals ``45 elm st, riverton, 84065``."""
    words = re.sub(r"[.,;]", " ", str(text).lower()).split()
    return " ".join(_ABBREVIATIONS.get(w, w) for w in words)


def reason(text: str) -> str:
    return " ".join(re.sub(r"[^a-z ]", " ", str(text).lower()).split())


def _pay(db: dict[str, Any], order: dict[str, Any], method: str, amount: float) -> None:
    """Record a charge (amount > 0) or refund (amount < 0) on *method*; a gift card's balance follows."""
    amount = round(amount, 2)
    if amount == 0:
        return
    kind = "charge" if amount > 0 else "refund"
    order["transactions"].append({"type": kind, "amount": abs(amount), "payment_method_id": method})
    card = db["customers"][order["customer_id"]]["payment_methods"][method]
    if card["kind"] == "gift_card":
        card["balance"] = round(card["balance"] - amount, 2)


def cancel_order(db: dict[str, Any], catalog: Catalog, args: dict[str, Any]) -> str:
    order = db["orders"][args["order_id"]]
    order["status"], order["cancel_reason"] = "cancelled", reason(args["reason"])
    _pay(db, order, order["payment_method_id"], -order["total"])
    return f"Order {order['order_id']} cancelled; ${order['total']:.2f} refunded to {order['payment_method_id']}."


def modify_address(db: dict[str, Any], catalog: Catalog, args: dict[str, Any]) -> str:
    order = db["orders"][args["order_id"]]
    order["address"] = address(args["address"])
    return f"Order {order['order_id']} will ship to {args['address']}."


def modify_payment(db: dict[str, Any], catalog: Catalog, args: dict[str, Any]) -> str:
    order = db["orders"][args["order_id"]]
    _pay(db, order, order["payment_method_id"], -order["total"])
    order["payment_method_id"] = args["payment_method_id"]
    _pay(db, order, order["payment_method_id"], order["total"])
    return f"Order {order['order_id']} is now paid with {order['payment_method_id']}."


def price_difference(order: dict[str, Any], catalog: Catalog, old: list[str], new: list[str]) -> float:
    prices = {item["item_id"]: item["price"] for item in order["items"]}
    return round(sum(catalog.by_item[i].price for i in new) - sum(prices[i] for i in old), 2)


def _difference_text(diff: float, method: str) -> str:
    if diff == 0:
        return "no price difference"
    return f"price difference ${abs(diff):.2f} {'charged to' if diff > 0 else 'refunded to'} {method}"


def modify_items(db: dict[str, Any], catalog: Catalog, args: dict[str, Any]) -> str:
    order = db["orders"][args["order_id"]]
    old, new, method = args["item_ids"], args["new_item_ids"], args["payment_method_id"]
    diff = price_difference(order, catalog, old, new)
    swap = dict(zip(old, new))
    order["items"] = [item_record(catalog.by_item[swap[i["item_id"]]], catalog) if i["item_id"] in swap else i
                      for i in order["items"]]
    order["total"] = round(order["total"] + diff, 2)
    order["modified"] = True
    _pay(db, order, method, diff)
    pairs = ", ".join(f"{a} -> {b}" for a, b in swap.items())
    return f"Order {order['order_id']} items changed: {pairs}; {_difference_text(diff, method)}."


def return_items(db: dict[str, Any], catalog: Catalog, args: dict[str, Any]) -> str:
    order = db["orders"][args["order_id"]]
    items, method = sorted(args["item_ids"]), args["payment_method_id"]
    amount = round(sum(i["price"] for i in order["items"] if i["item_id"] in items), 2)
    order["status"], order["returned_items"] = "return requested", items
    _pay(db, order, method, -amount)
    return (f"Return of {', '.join(items)} from {order['order_id']} requested; ${amount:.2f} will be refunded "
            f"to {method}.")


def exchange_items(db: dict[str, Any], catalog: Catalog, args: dict[str, Any]) -> str:
    order = db["orders"][args["order_id"]]
    old, new, method = args["item_ids"], args["new_item_ids"], args["payment_method_id"]
    diff = price_difference(order, catalog, old, new)
    order["status"] = "exchange requested"
    order["exchange"] = sorted([a, b] for a, b in zip(old, new))
    _pay(db, order, method, diff)
    pairs = ", ".join(f"{a} -> {b}" for a, b in zip(old, new))
    return f"Exchange of {pairs} in {order['order_id']} requested; {_difference_text(diff, method)}."


APPLY = {"cancel_order": cancel_order, "modify_address": modify_address, "modify_payment": modify_payment,
         "modify_items": modify_items, "return_items": return_items, "exchange_items": exchange_items}


def apply(db: dict[str, Any], catalog: Catalog, tool: str, args: dict[str, Any]) -> str:
    """Apply write *tool* with checked *args* to *db* in place; returns what the agent is told."""
    return APPLY[tool](db, catalog, args)

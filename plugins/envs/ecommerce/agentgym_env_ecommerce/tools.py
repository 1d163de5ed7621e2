"""Running the agent's tool calls on the episode's database: lookups, checks, policy, writes.

:class:`Desk` is the agent's side of one episode: which customer was identified, which
orders were looked at, whether the customer just confirmed a change. A call ends in an
:class:`Outcome`: its text for the agent, and whether it failed (an unknown id: feedback),
was invalid (a wrong argument: feedback), was forbidden by the policy (the episode ends
with reward 0), or changed the store.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import effects, policy
from .calls import WRITES, Call
from .catalog import Catalog


@dataclass
class Outcome:
    text: str
    failed: bool = False
    invalid: bool = False
    forbidden: str | None = None
    wrote: bool = False


class Refused(Exception):
    """A call that cannot be applied; ``invalid``: the arguments are wrong, else an id is unknown."""

    def __init__(self, text: str, invalid: bool = False) -> None:
        super().__init__(text)
        self.text, self.invalid = text, invalid


class Desk:
    """Tool calls of one episode against *db* (changed in place)."""

    def __init__(self, db: dict[str, Any], catalog: Catalog, *, require_confirmation: bool = True) -> None:
        self.db, self.catalog = db, catalog
        self.require_confirmation = require_confirmation
        self.customer_id: str | None = None
        self.seen_orders: set[str] = set()
        self.confirmed = False

    def run(self, call: Call) -> Outcome:
        try:
            if call.tool in WRITES:
                return self._write(call)
            return Outcome(getattr(self, f"_{call.tool}")(**call.args))
        except Refused as exc:
            return Outcome(exc.text, failed=not exc.invalid, invalid=exc.invalid)

    # -- lookups ---------------------------------------------------------------------------------
    def _find_customer(self, email: str = "", name: str = "", zip: str = "") -> str:  # noqa: A002 - the tool's argument
        customers = self.db["customers"].values()
        if email:
            found = [c for c in customers if c["email"] == email.strip().lower()]
            what = f"email {email}"
        else:
            found = [c for c in customers if c["name"].lower() == " ".join(name.lower().split())
                     and c["zip"] == zip.strip()]
            what = f"name {name} and zip {zip}"
        if not found:
            raise Refused(f"No customer with {what}. Ask the customer to check it (or use the other way: "
                          "email, or name and zip).")
        self.customer_id = found[0]["customer_id"]
        return f"Found customer {self.customer_id}."

    def _customer(self, customer_id: str | None = None) -> dict[str, Any]:
        if self.customer_id is None:
            raise Refused("Identify the customer first: find_customer(email) or find_customer(name, zip).")
        if customer_id is not None and customer_id.strip().lower() != self.customer_id:
            raise Refused(f"You may only look at the identified customer, {self.customer_id}.")
        return self.db["customers"][self.customer_id]

    def _get_customer(self, customer_id: str) -> str:
        c = self._customer(customer_id)
        methods = "; ".join(_method_text(m, info) for m, info in c["payment_methods"].items())
        return (f"Customer {c['customer_id']}: {c['name']}, {c['email']}, {c['address']}. Payment methods: {methods}. "
                f"Orders: {', '.join(c['orders'])}.")

    def _order(self, order_id: str) -> dict[str, Any]:
        customer = self._customer()
        key = effects.order_id(order_id)
        if key not in self.db["orders"]:
            raise Refused(f"No order {order_id}. The customer's orders are {', '.join(customer['orders'])}.")
        if key not in customer["orders"]:
            raise Refused(f"Order {key} belongs to another customer; act only on {self.customer_id}'s orders.")
        return self.db["orders"][key]

    def _get_order(self, order_id: str) -> str:
        order = self._order(order_id)
        self.seen_orders.add(order["order_id"])
        items = "; ".join(
            f"{i['item_id']} {i['name']} ({i['product_id']}: {', '.join(f'{k} {v}' for k, v in i['options'].items())}) "
            f"${i['price']:.2f}{' final sale' if self.catalog.by_product[i['product_id']].final_sale else ''}"
            for i in order["items"])
        return (f"Order {order['order_id']}: {_status_text(order)}. Ship to {order['address']}. "
                f"Paid ${order['total']:.2f} with {order['payment_method_id']}. Items: {items}.")

    def _get_product(self, product_id: str) -> str:
        text = product_id.strip()
        if text in self.catalog.by_item:
            product = self.catalog.product_of(text)
        else:
            digits = re.sub(r"\D", "", text)
            product = self.catalog.by_product.get(f"P{int(digits):02d}") if digits else None
        if product is None:
            raise Refused(f"No product {product_id}. Product ids look like P01 (get_order shows them).")
        variants = "; ".join(f"{v.item_id} {v.option_text()} ${v.price:.2f}{'' if v.available else ' out of stock'}"
                             for v in product.variants)
        return f"Product {product.product_id} {product.name}{' (final sale)' if product.final_sale else ''}: {variants}."

    # -- writes ----------------------------------------------------------------------------------
    def _write(self, call: Call) -> Outcome:
        order = self._order(call.args["order_id"])
        args = dict(call.args, order_id=order["order_id"])
        rule = getattr(self, f"_check_{call.tool}")(order, args)
        if rule is not None:
            return Outcome(f"Forbidden by the policy: {rule}.", forbidden=rule)
        if self.require_confirmation and not self.confirmed:
            rule = "changes need the customer's explicit confirmation first (ask them, wait for yes)"
            return Outcome(f"Forbidden by the policy: {rule}.", forbidden=rule)
        self.confirmed = False
        return Outcome(effects.apply(self.db, self.catalog, call.tool, args), wrote=True)

    def _method(self, payment_method_id: str) -> str:
        methods = self.db["customers"][self.customer_id]["payment_methods"]
        key = payment_method_id.strip().lower()
        if key not in methods:
            raise Refused(f"{payment_method_id} is not a payment method of {self.customer_id}; theirs are "
                          f"{', '.join(methods)}.", invalid=True)
        return key

    def _items(self, order: dict[str, Any], item_ids: list[str]) -> list[str]:
        have = [i["item_id"] for i in order["items"]]
        wrong = [i for i in item_ids if i not in have]
        if wrong or len(set(item_ids)) != len(item_ids):
            what = f"{', '.join(wrong)} not in" if wrong else "repeated items in"
            raise Refused(f"Item ids: {what} order {order['order_id']}; its items are {', '.join(have)}.", invalid=True)
        return item_ids

    def _new_items(self, order: dict[str, Any], args: dict[str, Any]) -> list[tuple[str, str]]:
        old, new = self._items(order, args["item_ids"]), args["new_item_ids"]
        if len(old) != len(new):
            raise Refused(f"Give one new item id per item: {len(old)} item_ids but {len(new)} new_item_ids.", invalid=True)
        unknown = [i for i in new if i not in self.catalog.by_item]
        if unknown:
            raise Refused(f"No item {unknown[0]}; get_product(product_id) lists the item ids of a product.", invalid=True)
        return list(zip(old, new))

    def _options(self, pairs: list[tuple[str, str]]) -> None:
        """The checks of new items after the policy's same-product rule."""
        for old, new in pairs:
            if old == new:
                raise Refused(f"Item {new} is the item already ordered; pick another option.", invalid=True)
            if not self.catalog.by_item[new].available:
                raise Refused(f"Item {new} is out of stock; pick an option in stock.", invalid=True)

    def _balance(self, order: dict[str, Any], method: str, amount: float) -> None:
        card = self.db["customers"][self.customer_id]["payment_methods"][method]
        if card["kind"] == "gift_card" and amount > card["balance"]:
            raise Refused(f"{method} has ${card['balance']:.2f}, not enough for ${amount:.2f}; use another method.",
                          invalid=True)

    def _check_cancel_order(self, order: dict[str, Any], args: dict[str, Any]) -> str | None:
        if effects.reason(args["reason"]) not in policy.CANCEL_REASONS:
            raise Refused(f"reason must be \"{policy.CANCEL_REASONS[0]}\" or \"{policy.CANCEL_REASONS[1]}\".",
                          invalid=True)
        return policy.check_cancel(order)

    def _check_modify_address(self, order: dict[str, Any], args: dict[str, Any]) -> str | None:
        if not re.search(r"\d", args["address"]):
            raise Refused("address needs a street number and zip, e.g. \"12 Oak St, Springfield, 62704\".", invalid=True)
        return policy.check_modify(order)

    def _check_modify_payment(self, order: dict[str, Any], args: dict[str, Any]) -> str | None:
        method = args["payment_method_id"] = self._method(args["payment_method_id"])
        rule = policy.check_modify(order)
        if rule is None:
            if method == order["payment_method_id"]:
                raise Refused(f"{order['order_id']} is already paid with {method}.", invalid=True)
            self._balance(order, method, order["total"])
        return rule

    def _check_modify_items(self, order: dict[str, Any], args: dict[str, Any]) -> str | None:
        pairs = self._new_items(order, args)
        method = args["payment_method_id"] = self._method(args["payment_method_id"])
        rule = policy.check_modify(order, items=True) or policy.check_same_product(pairs, self.catalog)
        if rule is None:
            self._options(pairs)
            self._balance(order, method, effects.price_difference(order, self.catalog, *map(list, zip(*pairs))))
        return rule

    def _check_return_items(self, order: dict[str, Any], args: dict[str, Any]) -> str | None:
        items = self._items(order, args["item_ids"])
        method = args["payment_method_id"] = self._method(args["payment_method_id"])
        return (policy.check_delivered_items(order, items, self.catalog, "returned")
                or policy.check_refund_method(order, self.db["customers"][self.customer_id], method))

    def _check_exchange_items(self, order: dict[str, Any], args: dict[str, Any]) -> str | None:
        pairs = self._new_items(order, args)
        method = args["payment_method_id"] = self._method(args["payment_method_id"])
        rule = (policy.check_delivered_items(order, args["item_ids"], self.catalog, "exchanged")
                or policy.check_same_product(pairs, self.catalog))
        if rule is None:
            self._options(pairs)
            self._balance(order, method, effects.price_difference(order, self.catalog, *map(list, zip(*pairs))))
        return rule


def _method_text(method: str, info: dict[str, Any]) -> str:
    if info["kind"] == "gift_card":
        return f"{method} (gift card, balance ${info['balance']:.2f})"
    return f"{method} ({info['label']})"


def _status_text(order: dict[str, Any]) -> str:
    status = order["status"]
    if status == "shipped":
        return f"shipped, tracking {order['tracking']}"
    if status == "delivered":
        return f"delivered {order['delivered_days_ago']} days ago, tracking {order['tracking']}"
    if status == "cancelled":
        return f"cancelled ({order['cancel_reason']})"
    if status == "return requested":
        return f"return requested for {', '.join(order['returned_items'])}"
    if status == "exchange requested":
        return f"exchange requested for {', '.join(f'{a} -> {b}' for a, b in order['exchange'])}"
    return "pending, items already changed once" if order["modified"] else "pending"

"""The store's tools on one episode's database: lookups, the policy's checks, and the changes.

Ids are read loosely (``W1234``, ``1234`` and ``#w1234`` are order ``#W1234``) and written
one canonical way, so the judge compares calls and databases exactly. Reading a record of
another customer than the authenticated one ends the episode (:class:`PrivacyError`).
"""
from __future__ import annotations

import re
from typing import Any

from agentgym_service.db import Database, as_json
from agentgym_service.desk import Desk, PrivacyError, ToolError

from . import policy
from .catalog import Catalog
from .records import Customer, Order, Transaction
from .world import item_record

_ABBREVIATIONS = {"street": "st", "avenue": "ave", "road": "rd", "lane": "ln", "drive": "dr", "boulevard": "blvd"}
_ORDER_ID = re.compile(r"#?\s*[Ww]?\s*(\d{4})")


def order_key(text: str) -> str | None:
    m = _ORDER_ID.fullmatch(str(text).strip())
    return f"#W{m.group(1)}" if m else None


def address_key(text: str) -> str:
    """One spelling of an address: ``45 Elm Street, Riverton 84065`` equals ``45 elm st, riverton, 84065``."""
    words = re.sub(r"[.,;]", " ", str(text).lower()).split()
    return " ".join(_ABBREVIATIONS.get(w, w) for w in words)


def reason_key(text: str) -> str:
    return " ".join(re.sub(r"[^a-z ]", " ", str(text).lower()).split())


class StoreDesk(Desk):
    def __init__(self, db: Database, catalog: Catalog) -> None:
        super().__init__(db)
        self.catalog = catalog

    # -- authentication and reads ----------------------------------------------------------------
    def find_customer(self, email: str = "", name: str = "", zip: str = "") -> str:  # noqa: A002 - the tool's argument
        customers = list(self.db.customers)
        if email:
            found = [c for c in customers if c.email == email.strip().lower()]
            what = f"email {email[:80]}"
        elif name and zip:
            found = [c for c in customers if c.name.lower() == " ".join(name.lower().split()) and c.zip == zip.strip()]
            what = f"name {name[:60]} and zip {zip[:12]}"
        else:
            raise ToolError('find_customer needs email="..." or name="First Last" and zip="12345"', invalid=True)
        if not found:
            raise ToolError(f"No customer with {what}. Ask the customer to check it (or use the other way: email, "
                            "or name and zip).")
        self.identity = found[0].customer_id
        return f"Found customer {self.identity}."

    def _customer(self) -> Customer:
        return self.db.customers[self.require_identity()]

    def get_customer(self, customer_id: str) -> str:
        me = self._customer()
        key = customer_id.strip().lower()
        if key != me.customer_id:
            if key in self.db.customers:
                raise PrivacyError(f"{customer_id} is another customer; only {me.customer_id} may be looked at.")
            raise ToolError(f"No customer {customer_id[:60]}; the authenticated customer is {me.customer_id}.")
        self.saw(f"customer:{me.customer_id}")
        methods = [{"id": m.method_id, "kind": m.kind, "label": m.label,
                    **({"balance": m.balance} if m.balance is not None else {}),
                    **({"expired": True} if m.expired else {})} for m in me.payment_methods]
        return as_json({"customer_id": me.customer_id, "name": me.name, "email": me.email, "address": me.address,
                        "payment_methods": methods, "orders": me.orders})

    def _order(self, order_id: str) -> Order:
        me = self._customer()
        key = order_key(order_id)
        order = self.db.orders.get(key) if key else None
        if order is None:
            raise ToolError(f"No order {order_id[:40]}. The customer's orders are {', '.join(me.orders)}.")
        if order.customer_id != me.customer_id:
            raise PrivacyError(f"Order {key} belongs to another customer; only {me.customer_id}'s orders may be "
                               "looked at.")
        return order

    def _unread(self, order: Order) -> str | None:
        """Policy 3: an order is looked up (get_order) before it is changed; its status decides what may be done.
        Checked before the other arguments: a write to an order not read breaks the rule whatever it asks."""
        if f"order:{order.order_id}" not in self.reads:
            return (f"{order.order_id} was changed without being looked up first; policy: read an order with get_order "
                    "before changing it (its status decides what may be done)")
        return None

    def get_order(self, order_id: str) -> str:
        order = self._order(order_id)
        self.saw(f"order:{order.order_id}")
        view: dict[str, Any] = {"order_id": order.order_id, "status": order.status}
        if order.delivered_days_ago is not None:
            view["delivered_days_ago"] = order.delivered_days_ago
        if order.tracking:
            view["tracking"] = order.tracking
        view.update(address=order.address, payment_method_id=order.payment_method_id, total=order.total,
                    items=[{"item_id": i.item_id, "product_id": i.product_id, "name": i.name, "options": i.options,
                            "price": i.price, "final_sale": self.catalog.by_product[i.product_id].final_sale}
                           for i in order.items])
        for key in ("cancel_reason", "returned_items", "exchange"):
            if getattr(order, key):
                view[key] = getattr(order, key)
        if order.modified:
            view["items_changed"] = True
        return as_json(view)

    def get_product(self, product_id: str) -> str:
        text = product_id.strip()
        if text in self.catalog.by_item:
            product = self.catalog.product_of(text)
        else:
            digits = re.fullmatch(r"[Pp]?\s*0*(\d{1,3})", text)
            product = self.catalog.by_product.get(f"P{int(digits.group(1)):02d}") if digits else None
        if product is None:
            raise ToolError(f"No product {text[:40]!r}. Product ids look like P07 (get_order and search_products "
                            "show them).")
        self.saw(f"product:{product.product_id}")
        return as_json({"product_id": product.product_id, "name": product.name, "final_sale": product.final_sale,
                        "variants": [{"item_id": v.item_id, "options": dict(v.options), "price": v.price,
                                      "available": v.available} for v in product.variants]})

    def search_products(self, query: str) -> str:
        words = [w for w in re.split(r"\W+", query.lower()) if w][:8]
        found = [p for p in self.catalog.products if words and all(w in p.name.lower() for w in words)]
        if not found:
            names = ", ".join(p.name for p in self.catalog.products)
            raise ToolError(f"No product matches {query[:40]!r}. Products: {names}.")
        return as_json([{"product_id": p.product_id, "name": p.name} for p in found])

    # -- checks: (canonical arguments, the rule broken or None) ---------------------------------
    def _method(self, method_id: str) -> str:
        me = self._customer()
        key = method_id.strip().lower()
        if me.method(key) is None:
            raise ToolError(f"{method_id[:40]} is not a payment method of {me.customer_id}; theirs are "
                            f"{', '.join(m.method_id for m in me.payment_methods)}.", invalid=True)
        return key

    def _items(self, order: Order, item_ids: list[str]) -> list[str]:
        have = [i.item_id for i in order.items]
        wrong = [i for i in item_ids if i not in have]
        if wrong or len(set(item_ids)) != len(item_ids):
            what = f"{', '.join(w[:12] for w in wrong[:3])} not in" if wrong else "repeated items in"
            raise ToolError(f"Item ids: {what} order {order.order_id}; its items are {', '.join(have)}.", invalid=True)
        return sorted(item_ids)

    def _pairs(self, order: Order, item_ids: list[str], new_item_ids: list[str]) -> list[tuple[str, str]]:
        self._items(order, item_ids)
        if len(item_ids) != len(new_item_ids):
            raise ToolError(f"Give one new item id per item: {len(item_ids)} item_ids but {len(new_item_ids)} "
                            "new_item_ids.", invalid=True)
        unknown = [i for i in new_item_ids if i not in self.catalog.by_item]
        if unknown:
            raise ToolError(f"No item {unknown[0][:12]}; get_product(product_id) lists the item ids of a product.",
                            invalid=True)
        return sorted(zip(item_ids, new_item_ids))

    def _options(self, pairs: list[tuple[str, str]]) -> None:
        for old, new in pairs:
            if old == new:
                raise ToolError(f"Item {new} is the item already ordered; pick another option.", invalid=True)
            if not self.catalog.by_item[new].available:
                raise ToolError(f"Item {new} is out of stock; pick an option in stock.", invalid=True)

    def _balance(self, method_id: str, amount: float) -> None:
        method = self._customer().method(method_id)
        if method.kind == "gift_card" and amount > method.balance:
            raise ToolError(f"{method_id} has ${method.balance:.2f}, not enough for ${amount:.2f}; use another method.",
                            invalid=True)

    def price_difference(self, order: Order, pairs: list[tuple[str, str]]) -> float:
        prices = {i.item_id: i.price for i in order.items}
        return round(sum(self.catalog.by_item[new].price - prices[old] for old, new in pairs), 2)

    def check_cancel_order(self, order_id: str, reason: str) -> tuple[dict, str | None]:
        order = self._order(order_id)
        return {"order_id": order.order_id, "reason": reason_key(reason)}, self._unread(order) or policy.check_cancel(order)

    def check_modify_address(self, order_id: str, address: str) -> tuple[dict, str | None]:
        order = self._order(order_id)
        if unread := self._unread(order):
            return {"order_id": order.order_id, "address": address_key(address)}, unread
        if not re.search(r"\d", address):
            raise ToolError('address needs a street number and zip, e.g. "12 Oak St, Springfield, 62704".', invalid=True)
        return {"order_id": order.order_id, "address": address_key(address)}, policy.check_modify(order)

    def check_modify_payment(self, order_id: str, payment_method_id: str) -> tuple[dict, str | None]:
        order = self._order(order_id)
        if unread := self._unread(order):
            return {"order_id": order.order_id, "payment_method_id": payment_method_id}, unread
        method = self._method(payment_method_id)
        rule = policy.check_modify(order) or policy.check_usable(self._customer(), method)
        if rule is None:
            if method == order.payment_method_id:
                raise ToolError(f"{order.order_id} is already paid with {method}.", invalid=True)
            self._balance(method, order.total)
        return {"order_id": order.order_id, "payment_method_id": method}, rule

    def _swap_check(self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str,
                    pending: bool) -> tuple[dict, str | None]:
        order = self._order(order_id)
        if unread := self._unread(order):
            return {"order_id": order.order_id, "item_ids": item_ids, "new_item_ids": new_item_ids,
                    "payment_method_id": payment_method_id}, unread
        pairs = self._pairs(order, item_ids, new_item_ids)
        method = self._method(payment_method_id)
        olds = [a for a, _ in pairs]
        rule = (policy.check_modify(order, items=True) if pending else
                policy.check_delivered_items(order, olds, self.catalog, "exchanged"))
        rule = rule or policy.check_same_product(pairs, self.catalog) or policy.check_usable(self._customer(), method)
        if rule is None:
            self._options(pairs)
            self._balance(method, self.price_difference(order, pairs))
        return {"order_id": order.order_id, "item_ids": olds, "new_item_ids": [b for _, b in pairs],
                "payment_method_id": method}, rule

    def check_modify_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                           payment_method_id: str) -> tuple[dict, str | None]:
        return self._swap_check(order_id, item_ids, new_item_ids, payment_method_id, pending=True)

    def check_exchange_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                             payment_method_id: str) -> tuple[dict, str | None]:
        return self._swap_check(order_id, item_ids, new_item_ids, payment_method_id, pending=False)

    def check_return_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> tuple[dict, str | None]:
        order = self._order(order_id)
        if unread := self._unread(order):
            return {"order_id": order.order_id, "item_ids": item_ids, "payment_method_id": payment_method_id}, unread
        items = self._items(order, item_ids)
        method = self._method(payment_method_id)
        rule = (policy.check_delivered_items(order, items, self.catalog, "returned")
                or policy.check_refund_method(order, self._customer(), method))
        return {"order_id": order.order_id, "item_ids": items, "payment_method_id": method}, rule

    def check_modify_customer_address(self, customer_id: str, address: str) -> tuple[dict, str | None]:
        me = self._customer()
        if customer_id.strip().lower() != me.customer_id:
            if customer_id.strip().lower() in self.db.customers:
                raise PrivacyError(f"{customer_id} is another customer; only {me.customer_id} may be changed.")
            raise ToolError(f"No customer {customer_id[:60]}; the authenticated customer is {me.customer_id}.")
        if not re.search(r"\d", address):
            raise ToolError('address needs a street number and zip, e.g. "12 Oak St, Springfield, 62704".', invalid=True)
        return {"customer_id": me.customer_id, "address": address_key(address)}, None

    # -- changes (canonical arguments; also how the goal database is made) -----------------------
    def _pay(self, order: Order, method_id: str, amount: float) -> None:
        """A charge (amount > 0) or refund (amount < 0) on *method_id*; a gift card's balance follows."""
        amount = round(amount, 2)
        if amount == 0:
            return
        order.transactions.append(Transaction("charge" if amount > 0 else "refund", abs(amount), method_id))
        method = self.db.customers[order.customer_id].method(method_id)
        if method.kind == "gift_card":
            method.balance = round(method.balance - amount, 2)

    def apply_cancel_order(self, order_id: str, reason: str) -> str:
        order = self.db.orders[order_id]
        order.status, order.cancel_reason = "cancelled", reason
        self._pay(order, order.payment_method_id, -order.total)
        return f"Order {order_id} cancelled; ${order.total:.2f} refunded to {order.payment_method_id}."

    def apply_modify_address(self, order_id: str, address: str) -> str:
        self.db.orders[order_id].address = address
        return f"Order {order_id} will ship to {address}."

    def apply_modify_payment(self, order_id: str, payment_method_id: str) -> str:
        order = self.db.orders[order_id]
        self._pay(order, order.payment_method_id, -order.total)
        order.payment_method_id = payment_method_id
        self._pay(order, payment_method_id, order.total)
        return f"Order {order_id} is now paid with {payment_method_id} (${order.total:.2f})."

    def _difference(self, diff: float, method: str) -> str:
        if diff == 0:
            return "no price difference"
        return f"price difference ${abs(diff):.2f} {'charged to' if diff > 0 else 'refunded to'} {method}"

    def apply_modify_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                           payment_method_id: str) -> str:
        order = self.db.orders[order_id]
        pairs = list(zip(item_ids, new_item_ids))
        diff = self.price_difference(order, pairs)
        swap = dict(pairs)
        order.items = [item_record(self.catalog.by_item[swap[i.item_id]], self.catalog) if i.item_id in swap else i
                       for i in order.items]
        order.total = round(order.total + diff, 2)
        order.modified = True
        self._pay(order, payment_method_id, diff)
        return (f"Order {order_id} items changed: {', '.join(f'{a} -> {b}' for a, b in pairs)}; "
                f"{self._difference(diff, payment_method_id)}.")

    def apply_return_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
        order = self.db.orders[order_id]
        amount = round(sum(i.price for i in order.items if i.item_id in item_ids), 2)
        order.status, order.returned_items = "return requested", list(item_ids)
        self._pay(order, payment_method_id, -amount)
        return (f"Return of {', '.join(item_ids)} from {order_id} requested; ${amount:.2f} will be refunded to "
                f"{payment_method_id}.")

    def apply_exchange_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                             payment_method_id: str) -> str:
        order = self.db.orders[order_id]
        pairs = list(zip(item_ids, new_item_ids))
        diff = self.price_difference(order, pairs)
        order.status, order.exchange = "exchange requested", [list(p) for p in pairs]
        self._pay(order, payment_method_id, diff)
        return (f"Exchange of {', '.join(f'{a} -> {b}' for a, b in pairs)} in {order_id} requested; "
                f"{self._difference(diff, payment_method_id)}.")

    def apply_modify_customer_address(self, customer_id: str, address: str) -> str:
        self.db.customers[customer_id].address = address
        return f"The default address of {customer_id} is now {address}."

"""The store's records (typed): customers with payment methods, orders with items and transactions."""
from __future__ import annotations

from dataclasses import dataclass, field

from agentgym_service.db import Database, Table


@dataclass
class PaymentMethod:
    method_id: str
    #: ``credit_card``, ``paypal`` or ``gift_card``.
    kind: str
    label: str
    balance: float | None = None
    #: An expired card is never charged or refunded (policy rule 6); its id stays on the profile.
    expired: bool = False


@dataclass
class Customer:
    customer_id: str
    name: str
    email: str
    zip: str
    address: str
    payment_methods: list[PaymentMethod]
    orders: list[str] = field(default_factory=list)

    def method(self, method_id: str) -> PaymentMethod | None:
        return next((m for m in self.payment_methods if m.method_id == method_id), None)


@dataclass
class Item:
    item_id: str
    product_id: str
    name: str
    options: dict[str, str]
    price: float


@dataclass
class Transaction:
    #: ``charge`` or ``refund``.
    kind: str
    amount: float
    payment_method_id: str


@dataclass
class Order:
    order_id: str
    customer_id: str
    #: pending, shipped, delivered, cancelled; after a request: return requested, exchange requested.
    status: str
    items: list[Item]
    address: str
    payment_method_id: str
    total: float
    tracking: str | None = None
    delivered_days_ago: int | None = None
    cancel_reason: str | None = None
    transactions: list[Transaction] = field(default_factory=list)
    returned_items: list[str] = field(default_factory=list)
    exchange: list[list[str]] = field(default_factory=list)
    modified: bool = False


def new_database() -> Database:
    return Database(customers=Table(Customer, "customer_id"), orders=Table(Order, "order_id"))

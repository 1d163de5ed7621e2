"""Generated people and orders of one task's store (from a seeded generator; products come from the catalog)."""
from __future__ import annotations

import random

from .catalog import Catalog, Variant
from .records import Customer, Item, Order, PaymentMethod, Transaction

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
                  gift_card: bool | None = None, paypal: bool | None = None, cards: int | None = None) -> Customer:
    first, last = name or (rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES))
    suffix = ids.take(lambda r: str(r.randint(1000, 9999)))
    place = rng.choice(PLACES)
    methods = []
    for _ in range(cards or rng.choice((1, 1, 2))):
        digits = ids.take(lambda r: str(r.randint(1000, 9999)))
        methods.append(PaymentMethod(f"credit_card_{digits}", "credit_card", f"{rng.choice(CARD_BRANDS)} ending {digits}"))
    if paypal if paypal is not None else rng.random() < 0.4:
        methods.append(PaymentMethod(f"paypal_{ids.take(lambda r: str(r.randint(1000, 9999)))}", "paypal", "paypal"))
    if gift_card if gift_card is not None else rng.random() < 0.4:
        methods.append(PaymentMethod(f"gift_card_{ids.take(lambda r: str(r.randint(1000, 9999)))}", "gift_card",
                                     "gift card", float(rng.randrange(60, 400, 5))))
    return Customer(customer_id=f"{first}_{last}_{suffix}".lower(), name=f"{first} {last}",
                    email=f"{first}.{last}{suffix[:2]}@example.com".lower(), zip=place[1],
                    address=new_address(rng, place), payment_methods=methods)


def item_record(variant: Variant, catalog: Catalog) -> Item:
    product = catalog.by_product[variant.product_id]
    return Item(variant.item_id, variant.product_id, product.name, dict(variant.options), variant.price)


def pick_items(rng: random.Random, catalog: Catalog, n: int, *, final_sale: bool | None = None,
               exclude: tuple[str, ...] = ()) -> list[Variant]:
    """*n* variants of distinct products (any, only final-sale or only returnable ones)."""
    products = [p for p in catalog.products if p.product_id not in exclude
                and (final_sale is None or p.final_sale == final_sale)]
    return [rng.choice(p.variants) for p in rng.sample(products, n)]


def make_order(rng: random.Random, ids: IdPool, catalog: Catalog, customer: Customer, status: str,
               items: list[Variant], *, days: int | None = None, payment: str | None = None) -> Order:
    """An order of *customer* in *status*, inserted into the customer's order list at a random place (paid
    with *payment*, else with a card or PayPal of theirs that has not expired)."""
    order_id = ids.take(lambda r: f"#W{r.randint(1000, 9999)}")
    records = [item_record(v, catalog) for v in items]
    total = round(sum(r.price for r in records), 2)
    methods = [m.method_id for m in customer.payment_methods if m.kind != "gift_card" and not m.expired]
    order = Order(order_id=order_id, customer_id=customer.customer_id, status=status, items=records,
                  address=customer.address, payment_method_id=payment or rng.choice(methods), total=total)
    if status in ("shipped", "delivered"):
        order.tracking = ids.take(lambda r: str(r.randint(10**9, 10**10 - 1)))
    if status == "delivered":
        order.delivered_days_ago = days if days is not None else rng.randint(1, 90)
    if status == "cancelled":
        order.cancel_reason = rng.choice(("no longer needed", "ordered by mistake"))
        order.transactions.append(Transaction("refund", total, order.payment_method_id))
    customer.orders.insert(rng.randint(0, len(customer.orders)), order_id)
    return order


def expired_card(rng: random.Random, ids: IdPool, customer: Customer) -> str:
    """A card of *customer* that has expired (added, or one they have); returns its id."""
    old = next((m for m in customer.payment_methods if m.expired), None)
    if old is None:
        digits = ids.take(lambda r: str(r.randint(1000, 9999)))
        old = PaymentMethod(f"credit_card_{digits}", "credit_card", f"{rng.choice(CARD_BRANDS)} ending {digits}",
                            expired=True)
        customer.payment_methods.insert(rng.randint(0, len(customer.payment_methods)), old)
    return old.method_id


def with_method(rng: random.Random, ids: IdPool, customer: Customer, kind: str) -> str:
    """A ``gift_card`` or ``paypal`` method of *customer* (added if they have none); returns its id."""
    method = next((m for m in customer.payment_methods if m.kind == kind), None)
    if method is None:
        suffix = ids.take(lambda r: str(r.randint(1000, 9999)))
        method = (PaymentMethod(f"gift_card_{suffix}", "gift_card", "gift card", float(rng.randrange(60, 400, 5)))
                  if kind == "gift_card" else PaymentMethod(f"paypal_{suffix}", "paypal", "paypal"))
        customer.payment_methods.append(method)
    return method.method_id


def background_orders(rng: random.Random, ids: IdPool, catalog: Catalog, customer: Customer, n: int) -> list[Order]:
    return [make_order(rng, ids, catalog, customer, rng.choice(STATUSES), pick_items(rng, catalog, rng.randint(1, 3)))
            for _ in range(n)]

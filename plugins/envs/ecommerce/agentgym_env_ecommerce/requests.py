"""One customer request each: the order it is about (added to the store), the details the customer
gives when asked, the change it wants and how a confirmation must describe it, the answers it
must be told. Built from a seeded generator; the goal database is the store with the wanted
changes applied by the same code the tools run (:mod:`.tasks`).

:func:`return_left` and :func:`exchange_left` are allowed requests whose right write the policy
decides and the customer does not state: they leave the refund (the price difference) to the store
(rule 5). Half the time the card the order was paid with has expired, so it goes to their gift card
(the original card is a forbidden write, rule 6); else it goes back to that card (the gift card they
also have is the wrong write). Either answer is as likely, so a habit (always the gift card, always
the original) wins half of them, and only reading the profile wins them all. One such decision is one
bit, so :func:`exchange_left` also leaves the new option to the store: the one in stock closest in
price (:func:`closest_option`), among at least :data:`MIN_CHOICES`, which a habit (the first in stock,
the cheapest) hits in 15-25% of the tasks.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from agentgym_service.goal import Change, Mention, Output, Request, Slot
from agentgym_service.wording import Words

from .catalog import Catalog, Variant
from .desk import address_key
from .policy import CANCEL_REASONS
from .records import Customer, Order
from .world import RETURN_DAYS, IdPool, expired_card, make_order, new_address, pick_items, with_method

#: Requests the policy allows, by the write they need (or none, for questions).
ALLOWED = ("order_status", "cancel", "return", "exchange", "change_address", "change_items", "change_payment",
           "change_profile", "product_search")
WRITES = ("cancel", "return", "exchange", "change_address", "change_items", "change_payment", "change_profile")
#: A new option left to the store (:func:`exchange_left`) is chosen among at least this many in stock.
MIN_CHOICES = 4
#: What a ``forbidden`` request asks for, which the policy does not allow.
FORBIDDEN_KINDS = ("cancel_shipped", "return_late", "return_final_sale", "refund_elsewhere", "address_shipped",
                   "exchange_other_product")


@dataclass
class Ctx:
    rng: random.Random
    ids: IdPool
    cat: Catalog
    customer: Customer
    words: Words
    orders: list[Order] = field(default_factory=list)
    #: What earlier requests of the task take from each gift card (so later ones still fit its balance).
    spent: dict[str, float] = field(default_factory=dict)

    def can_pay(self, method, amount: float) -> bool:
        if method.kind != "gift_card":
            return True
        return method.balance - self.spent.get(method.method_id, 0.0) >= max(amount, 0.0)

    def spend(self, method_id: str, amount: float) -> None:
        self.spent[method_id] = self.spent.get(method_id, 0.0) + max(amount, 0.0)

    def order(self, status: str, items: list[Variant], **kw) -> Order:
        order = make_order(self.rng, self.ids, self.cat, self.customer, status, items, **kw)
        self.orders.append(order)
        return order


# -- how a confirmation must name things ---------------------------------------------------------
def m_order(order: Order) -> Mention:
    digits = order.order_id[2:]
    return Mention("order", (order.order_id, f"w{digits}", f"order {digits}"), f"It's order {order.order_id}.")


def m_item(cat: Catalog, item_id: str) -> Mention:
    name = cat.by_product[cat.by_item[item_id].product_id].name
    return Mention("item", (item_id, name), f"It's the {name}.")


def m_options(cat: Catalog, new: Variant, change: dict[str, str]) -> list[Mention]:
    out = []
    for axis, value in change.items():
        phrases = (new.item_id, f"{axis} {value}", f"{value} {axis}") + ((value,) if len(value) >= 3 else ())
        out.append(Mention("options", phrases, f"I want {axis} {value}."))
    return out


def m_payment(customer: Customer, method_id: str, original: str | None) -> Mention:
    method = customer.method(method_id)
    phrases: tuple[str, ...] = (method_id,)
    if method.kind == "gift_card":
        phrases += ("gift card",)
    elif method.kind == "paypal":
        phrases += ("paypal",)
    else:
        last4 = method_id[-4:]
        phrases += (f"ending {last4}", f"ending in {last4}")
    if method_id == original:
        phrases += ("original payment method", "original method", "original card", "same card", "card you paid with")
    return Mention("payment", phrases, f"I want it on {_my_method(method, method_id == original)}.")


def _my_method(method, original: bool) -> str:
    if original:
        return "the original payment method"
    return {"gift_card": "my gift card", "paypal": "my PayPal"}.get(method.kind, f"my card ending in {method.method_id[-4:]}")


def m_address(address: str) -> list[Mention]:
    street, city, zip_code = [p.strip() for p in address.split(",")]
    number, name = street.split(" ", 1)
    long = name.replace(" St", " Street").replace(" Ave", " Avenue").replace(" Rd", " Road").replace(
        " Ln", " Lane").replace(" Dr", " Drive").replace(" Blvd", " Boulevard")
    return [Mention("address", (street, f"{number} {long}"), f"The address is {address}."),
            Mention("zip", (zip_code,), f"The zip code is {zip_code}.")]


def describe_item(cat: Catalog, item_id: str) -> str:
    v = cat.by_item[item_id]
    return f"the {cat.by_product[v.product_id].name} ({v.option_text()})"


def payment_slot(w: Words, customer: Customer, method_id: str, original: str | None, *, left: bool = False) -> Slot:
    """How the customer names the method when asked; *left*: they leave it to the store (the policy decides)."""
    method = customer.method(method_id)
    if left:
        return Slot("payment", "don't mind", w("pay_left"))
    if method_id == original:
        return Slot("payment", "original payment method", w("pay_original"))
    if method.kind in ("gift_card", "paypal"):
        return Slot("payment", "gift card" if method.kind == "gift_card" else "paypal", w(f"pay_{method.kind}"))
    return Slot("payment", f"ending in {method_id[-4:]}", w("pay_card", last4=method_id[-4:]))


def _outputs_amount(label: str, value: float, order: Order, w: Words) -> Output:
    return Output(label, "amount", round(abs(value), 2), f"order:{order.order_id}", w(f"q_{label}"))


# -- one builder per request kind ----------------------------------------------------------------
def order_status(c: Ctx) -> Request:
    w, status = c.words, c.rng.choice(("pending", "shipped", "delivered", "cancelled"))
    order = c.order(status, pick_items(c.rng, c.cat, c.rng.randint(1, 3)))
    outputs = [Output("status", "choice", status, f"order:{order.order_id}", w("q_status"), "status")]
    if status == "shipped":
        outputs.append(Output("tracking", "token", order.tracking, f"order:{order.order_id}", w("q_tracking"), "tracking"))
    return Request("order_status", w.all("open_status"), (Slot("order_id", order.order_id, w("order", order=order.order_id)),),
                   outputs=tuple(outputs))


def cancel(c: Ctx) -> Request:
    w = c.words
    order = c.order("pending", pick_items(c.rng, c.cat, c.rng.randint(1, 3)))
    reason = c.rng.choice(CANCEL_REASONS)
    change = Change("cancel_order", {"order_id": order.order_id, "reason": reason}, (m_order(order),),
                    {"order": frozenset({order.order_id}), "payment": frozenset({order.payment_method_id}),
                     "item": frozenset(i.item_id for i in order.items)},
                    f"cancel order {order.order_id}")
    slots = (Slot("order_id", order.order_id, w("order", order=order.order_id)),
             Slot("reason", "no longer needed" if reason == CANCEL_REASONS[0] else "by mistake", w(f"reason_{reason}")))
    return Request("cancel", w.all("open_cancel"), slots, (change,),
                   (_outputs_amount("refund", order.total, order, w),))


def _refund_method(c: Ctx, order: Order) -> str:
    cards = [m.method_id for m in c.customer.payment_methods if m.kind == "gift_card"]
    return cards[0] if cards and c.rng.random() < 0.4 else order.payment_method_id


def return_(c: Ctx, *, expired: bool = False, left: bool | None = None) -> Request:
    """Return delivered items; the refund where the customer says, or (a quarter of the time, always when *left*
    or *expired*: the order was paid with a card that has since expired) where the policy puts it."""
    w = c.words
    variants = pick_items(c.rng, c.cat, c.rng.randint(1, 4), final_sale=False)
    chosen = sorted(v.item_id for v in c.rng.sample(variants, c.rng.randint(1, min(3, len(variants)))))
    if c.rng.random() < 0.25:  # a final-sale item in the order that is not returned (the rule is per item)
        variants += pick_items(c.rng, c.cat, 1, final_sale=True)
    paid = expired_card(c.rng, c.ids, c.customer) if expired else None
    order = c.order("delivered", variants, days=c.rng.randint(1, RETURN_DAYS), payment=paid)
    if left is None:
        left = expired or c.rng.random() < 0.25
    method = with_method(c.rng, c.ids, c.customer, "gift_card") if expired else (
        order.payment_method_id if left else _refund_method(c, order))
    amount = sum(i.price for i in order.items if i.item_id in chosen)
    names = " and ".join(describe_item(c.cat, i) for i in chosen)
    change = Change("return_items", {"order_id": order.order_id, "item_ids": chosen, "payment_method_id": method},
                    (m_order(order), *(m_item(c.cat, i) for i in chosen),
                     m_payment(c.customer, method, order.payment_method_id)),
                    {"order": frozenset({order.order_id}), "item": frozenset(chosen), "payment": frozenset({method})},
                    f"return {names} from order {order.order_id}, refunded to "
                    f"{_my_method(c.customer.method(method), method == order.payment_method_id)}")
    first = c.cat.by_product[c.cat.by_item[chosen[0]].product_id].name
    slots = (Slot("order_id", order.order_id, w("order", order=order.order_id)),
             Slot("items", first, w("items_return", items=names)),
             payment_slot(w, c.customer, method, order.payment_method_id, left=left))
    return Request("return", w.all("open_return"), slots, (change,), (_outputs_amount("refund", amount, order, w),))


def _left_to_us(c: Ctx) -> bool:
    """For a value hinge: whether the card the order is paid with has expired (half the time); the customer has a
    gift card either way, so the gift card is never the only method a habit could pick."""
    with_method(c.rng, c.ids, c.customer, "gift_card")
    return c.rng.random() < 0.5


def return_left(c: Ctx) -> Request:
    return return_(c, expired=_left_to_us(c), left=True)


def closest_option(cat: Catalog, item: Variant, fits=lambda v: True) -> tuple[Variant | None, int]:
    """Rule 5, a new option the customer leaves to the store: the other option of the same product in stock whose
    price is closest to the item's, the cheaper of two as close; with how many options were in stock to choose from
    (*fits*: which of them the payment can take)."""
    options = [v for v in cat.by_product[item.product_id].variants if v.available and v.item_id != item.item_id]
    best = min(options, key=lambda v: (abs(v.price - item.price), v.price), default=None)
    return (best if best is not None and fits(best) else None), len(options)


def _swap(c: Ctx, kind: str, status: str, *, days: int | None = None, final: bool = False, changed: bool = False,
          allowed: bool = True, expired: bool = False, left: bool | None = None, choose: bool = False) -> Request:
    """Another option of an item: ``exchange`` (delivered) or ``change_items`` (pending), the price difference on
    the method the customer says or (for a fifth of the exchanges, always when *left* or *expired*: the order was
    paid with a card that has since expired) where the policy puts it; for the forbidden ones (:mod:`.forbidden`) an order in another
    *status*, delivered *days* ago, the item *final* sale, or the order's items *changed* already. *choose*: the
    customer leaves the new option to the store too (rule 5: the one closest in price, :func:`closest_option`), among
    at least :data:`MIN_CHOICES` options in stock, so a guess rarely hits it."""
    w = c.words
    n = c.rng.randint(1, 3)
    if final:
        variants = pick_items(c.rng, c.cat, 1, final_sale=True)
        variants += pick_items(c.rng, c.cat, n - 1, final_sale=False, exclude=(variants[0].product_id,))
    else:
        variants = pick_items(c.rng, c.cat, n, final_sale=False if status == "delivered" else None)
    if status == "delivered" and days is None:
        days = c.rng.randint(1, RETURN_DAYS)
    gift = with_method(c.rng, c.ids, c.customer, "gift_card") if expired else None
    order = c.order(status, variants, days=days, payment=expired_card(c.rng, c.ids, c.customer) if expired else None)
    order.modified = changed
    target, new = None, None
    for v in variants[:1] if final else c.rng.sample(variants, len(variants)):  # an item with another option in stock
        product = c.cat.by_product[v.product_id]
        def fits(o: Variant, v: Variant = v) -> bool:
            return gift is None or c.can_pay(c.customer.method(gift), o.price - v.price)

        if choose:
            best, choices = closest_option(c.cat, v, fits)
            if best is not None and choices >= MIN_CHOICES:
                target, new = v, best
                break
            continue
        options = [o for o in product.variants if o.available and o.item_id != v.item_id and fits(o)]
        if options:
            target, new = v, c.rng.choice(options)
            break
    if target is None:  # every other option out of stock (or beyond the gift card): pick another product set
        c.orders.remove(order)
        c.customer.orders.remove(order.order_id)
        return _swap(c, kind, status, days=days, final=final, changed=changed, allowed=allowed, expired=expired,
                     left=left, choose=choose)
    change_opts = {a: b for (a, b), (_, old) in zip(new.options, target.options) if b != old}
    if left is None:
        left = expired or allowed and status == "delivered" and c.rng.random() < 0.2
    method = gift or order.payment_method_id
    cards = [m for m in c.customer.payment_methods if m.kind == "gift_card" and c.can_pay(m, new.price - target.price)]
    if not left and cards and c.rng.random() < 0.3:
        method = cards[0].method_id
    if allowed and method.startswith("gift_card"):
        c.spend(method, new.price - target.price)
    tool = "exchange_items" if kind == "exchange" else "modify_items"
    options_text = ", ".join(f"{a} {b}" for a, b in change_opts.items())
    item_name = c.cat.by_product[target.product_id].name
    change = Change(tool, {"order_id": order.order_id, "item_ids": [target.item_id], "new_item_ids": [new.item_id],
                           "payment_method_id": method},
                    (m_order(order), m_item(c.cat, target.item_id), *m_options(c.cat, new, change_opts),
                     m_payment(c.customer, method, order.payment_method_id)),
                    {"order": frozenset({order.order_id}), "item": frozenset({target.item_id, new.item_id}),
                     "payment": frozenset({method})},
                    f"{'exchange' if kind == 'exchange' else 'change'} {describe_item(c.cat, target.item_id)} in order "
                    f"{order.order_id} for {options_text}, the difference on "
                    f"{_my_method(c.customer.method(method), method == order.payment_method_id)}")
    slots = (Slot("order_id", order.order_id, w("order", order=order.order_id)),
             Slot("items", item_name, w("items_swap", items=describe_item(c.cat, target.item_id))),
             Slot("options", "any other option", w("options_left")) if choose else
             Slot("options", options_text, w("options", options=options_text)),
             payment_slot(w, c.customer, method, order.payment_method_id, left=left))
    diff = new.price - target.price
    return Request(kind, w.all(f"open_{'exchange' if kind == 'exchange' else 'items'}"), slots, (change,),
                   (_outputs_amount("difference", diff, order, w),))


def exchange(c: Ctx) -> Request:
    return _swap(c, "exchange", "delivered")


def exchange_left(c: Ctx) -> Request:
    return _swap(c, "exchange", "delivered", expired=_left_to_us(c), left=True, choose=True)


def change_items(c: Ctx) -> Request:
    return _swap(c, "change_items", "pending")


def change_address(c: Ctx) -> Request:
    w = c.words
    order = c.order("pending", pick_items(c.rng, c.cat, c.rng.randint(1, 3)))
    address = new_address(c.rng)
    change = Change("modify_address", {"order_id": order.order_id, "address": address_key(address)},
                    (m_order(order), *m_address(address)), {"order": frozenset({order.order_id})},
                    f"ship order {order.order_id} to {address}")
    slots = (Slot("order_id", order.order_id, w("order", order=order.order_id)),
             Slot("address", address.split(",")[0], w("address", address=address)))
    return Request("change_address", w.all("open_address"), slots, (change,))


def change_payment(c: Ctx, *, status: str = "pending", expired: bool = False) -> Request:
    """Pay a pending order with another method of the customer; for the forbidden ones (:mod:`.forbidden`) an
    order in another *status*, or a card that has *expired*."""
    w = c.words
    if sum(not m.expired for m in c.customer.payment_methods) < 2:
        c.customer.payment_methods.append(_extra_card(c))
    order = c.order(status, pick_items(c.rng, c.cat, c.rng.randint(1, 2)))
    if expired:
        method = expired_card(c.rng, c.ids, c.customer)
    else:
        options = [m for m in c.customer.payment_methods if m.method_id != order.payment_method_id
                   and not m.expired and c.can_pay(m, order.total)]
        if not options:
            c.customer.payment_methods.append(_extra_card(c))
            options = [c.customer.payment_methods[-1]]
        method = c.rng.choice(options).method_id
        if status == "pending":
            c.spend(method, order.total)
    change = Change("modify_payment", {"order_id": order.order_id, "payment_method_id": method},
                    (m_order(order), m_payment(c.customer, method, None)),
                    {"order": frozenset({order.order_id}), "payment": frozenset({method, order.payment_method_id})},
                    f"pay order {order.order_id} with {_my_method(c.customer.method(method), False)}")
    slots = (Slot("order_id", order.order_id, w("order", order=order.order_id)),
             payment_slot(w, c.customer, method, None))
    return Request("change_payment", w.all("open_payment"), slots, (change,))


def _extra_card(c: Ctx):
    from .records import PaymentMethod

    digits = c.ids.take(lambda r: str(r.randint(1000, 9999)))
    return PaymentMethod(f"credit_card_{digits}", "credit_card", f"visa ending {digits}")


def change_profile(c: Ctx) -> Request:
    w = c.words
    address = new_address(c.rng)
    cid = c.customer.customer_id
    profile = Mention("profile", ("profile", "account", "default address", "on file", "saved address"),
                      "I mean the default address on my account.")
    change = Change("modify_customer_address", {"customer_id": cid, "address": address_key(address)},
                    (profile, *m_address(address)), {"order": frozenset()}, f"change my default address to {address}")
    slots = (Slot("address", address.split(",")[0], w("profile_address", address=address)),)
    return Request("change_profile", w.all("open_profile"), slots, (change,))


def product_search(c: Ctx) -> Request:
    w = c.words
    product = c.rng.choice(c.cat.products)
    variant = c.rng.choice(product.variants)
    options = variant.option_text()
    record = f"product:{product.product_id}"
    stock = "in stock" if variant.available else "out of stock"
    outputs = (Output("price", "amount", variant.price, record, w("q_price")),
               Output("stock", "choice", stock, record, w("q_stock"), "stock"))
    slots = (Slot("product", product.name, w("product", product=product.name, options=options)),)
    return Request("product_search", w.all("open_search"), slots, outputs=outputs)


BUILDERS = {"order_status": order_status, "cancel": cancel, "return": return_, "exchange": exchange,
            "change_address": change_address, "change_items": change_items, "change_payment": change_payment,
            "change_profile": change_profile, "product_search": product_search}

"""Requests the policy forbids: the customer asks for them like any other, and the agent must find
out the details, look at the order (and, for a card, the profile), and refuse (or transfer)
instead of making the change. The write the customer asks for breaks a rule the desk checks, so
an agent that does what it is asked without applying the policy ends the episode with 0.

``exchange_other_product`` asks for a change no tool makes as asked (another product): it opens a
``forbidden`` task only (see :func:`.tasks.kinds_of`).
"""
from __future__ import annotations

from dataclasses import replace

from agentgym_service.goal import Change, Request, Slot

from .desk import address_key
from .policy import CANCEL_REASONS
from .requests import Ctx, _swap, change_payment, describe_item, m_address, m_item, m_order, m_payment, payment_slot
from .world import RETURN_DAYS, new_address, pick_items, with_method


def _order_slot(c: Ctx, order) -> Slot:
    return Slot("order_id", order.order_id, c.words("order", order=order.order_id))


def _forbid(request: Request, rule: str, reasons: tuple[str, ...], elicit: tuple[str, ...] = ("order_id",),
            reads: tuple[str, ...] = ()) -> Request:
    """*request* (an allowed request's builder's) as one the policy forbids for *reasons* (names of
    :data:`.lexicon.REASONS`): no answers asked, refused after *elicit* slots were said and the order (and *reads*) read."""
    order = request.slots[0].value
    return replace(request, outputs=(), forbidden=rule, elicit=elicit, reads=(f"order:{order}", *reads), reasons=reasons)


def cancel_shipped(c: Ctx) -> Request:
    order = c.order(c.rng.choice(("shipped", "delivered")), pick_items(c.rng, c.cat, c.rng.randint(1, 3)))
    reason = c.rng.choice(CANCEL_REASONS)
    change = Change("cancel_order", {"order_id": order.order_id, "reason": reason}, (m_order(order),),
                    {"order": frozenset({order.order_id})}, f"cancel order {order.order_id}")
    slots = (_order_slot(c, order),
             Slot("reason", "no longer needed" if reason == CANCEL_REASONS[0] else "by mistake", c.words(f"reason_{reason}")))
    return Request("cancel", c.words.all("open_cancel"), slots, (change,),
                   forbidden=f"only pending orders may be cancelled; {order.order_id} is {order.status}",
                   elicit=("order_id",), reads=(f"order:{order.order_id}",), reasons=("not_pending",))


def address_shipped(c: Ctx) -> Request:
    order = c.order("shipped", pick_items(c.rng, c.cat, c.rng.randint(1, 3)))
    address = new_address(c.rng)
    change = Change("modify_address", {"order_id": order.order_id, "address": address_key(address)},
                    (m_order(order), *m_address(address)), {"order": frozenset({order.order_id})},
                    f"ship order {order.order_id} to {address}")
    slots = (_order_slot(c, order), Slot("address", address.split(",")[0], c.words("address", address=address)))
    return Request("change_address", c.words.all("open_address"), slots, (change,),
                   forbidden=f"only pending orders may be modified; {order.order_id} is shipped",
                   elicit=("order_id",), reads=(f"order:{order.order_id}",), reasons=("not_pending",))


def _return(c: Ctx, kind: str) -> Request:
    n = c.rng.randint(1, 3)
    status, days = "delivered", c.rng.randint(1, RETURN_DAYS)
    if kind == "return_final_sale":
        items = pick_items(c.rng, c.cat, 1, final_sale=True)
        items += pick_items(c.rng, c.cat, n - 1, exclude=(items[0].product_id,))
    else:
        items = pick_items(c.rng, c.cat, n, final_sale=False)
        if kind == "return_late":
            days = c.rng.randint(RETURN_DAYS + 5, 120)
        elif kind == "return_undelivered":
            status, days = c.rng.choice(("pending", "shipped")), None
    card = next(m.method_id for m in c.customer.payment_methods if m.kind == "credit_card" and not m.expired)
    order = c.order(status, items, days=days, payment=card)
    item = items[0].item_id
    method, rule = order.payment_method_id, None
    if kind == "refund_elsewhere":
        method = with_method(c.rng, c.ids, c.customer, "paypal")
        rule, reason = f"refunds go to the original payment method ({card}) or a gift card, not {method}", "refund_method"
    elif kind == "return_late":
        rule = f"items may be returned only within {RETURN_DAYS} days of delivery; {order.order_id} was delivered {days} days ago"
        reason = "window"
    elif kind == "return_undelivered":
        rule, reason = f"only delivered orders may have items returned; {order.order_id} is {status}", "undelivered"
    else:
        rule = f"{c.cat.by_product[items[0].product_id].name} ({item}) is a final-sale item and cannot be returned"
        reason = "final_sale"
    change = Change("return_items", {"order_id": order.order_id, "item_ids": [item], "payment_method_id": method},
                    (m_order(order), m_item(c.cat, item), m_payment(c.customer, method, card)),
                    {"order": frozenset({order.order_id}), "item": frozenset({item}), "payment": frozenset({method})},
                    f"return {describe_item(c.cat, item)} from order {order.order_id}")
    slots = (_order_slot(c, order),
             Slot("items", c.cat.by_product[items[0].product_id].name,
                  c.words("items_return", items=describe_item(c.cat, item))),
             payment_slot(c.words, c.customer, method, card))
    elicit = {"refund_elsewhere": ("order_id", "payment"), "return_final_sale": ("order_id", "items")}.get(kind, ("order_id",))
    opening = "open_return_early" if kind == "return_undelivered" else "open_return"
    return Request("return", c.words.all(opening), slots, (change,), forbidden=rule, elicit=elicit,
                   reads=(f"order:{order.order_id}",), reasons=(reason,))


def exchange_other_product(c: Ctx) -> Request:
    items = pick_items(c.rng, c.cat, c.rng.randint(1, 3), final_sale=False)
    order = c.order("delivered", items, days=c.rng.randint(1, RETURN_DAYS))
    owned = {v.product_id for v in items}
    other = c.rng.choice([p.name for p in c.cat.products if p.product_id not in owned])
    item = items[0]
    slots = (_order_slot(c, order),
             Slot("items", c.cat.by_product[item.product_id].name,
                  c.words("items_swap", items=describe_item(c.cat, item.item_id))),
             Slot("options", other, c.words("other_product", product=other)))
    return Request("exchange", c.words.all("open_exchange"), slots,
                   forbidden="an item may only be exchanged for another option of the same product",
                   elicit=("order_id", "items", "options"), reads=(f"order:{order.order_id}",), reasons=("same_product",))


def exchange_late(c: Ctx) -> Request:
    days = c.rng.randint(RETURN_DAYS + 5, 120)
    request = _swap(c, "exchange", "delivered", days=days, allowed=False)
    order = request.slots[0].value
    return _forbid(request, f"items may be exchanged only within {RETURN_DAYS} days of delivery; {order} was "
                            f"delivered {days} days ago", ("window",))


def exchange_final_sale(c: Ctx) -> Request:
    request = _swap(c, "exchange", "delivered", final=True, allowed=False)
    item = request.changes[0].args["item_ids"][0]
    return _forbid(request, f"{c.cat.product_of(item).name} ({item}) is a final-sale item and cannot be exchanged",
                   ("final_sale",), elicit=("order_id", "items"))


def items_shipped(c: Ctx) -> Request:
    status = c.rng.choice(("shipped", "delivered"))
    request = _swap(c, "change_items", status, allowed=False)
    return _forbid(request, f"only pending orders may be modified; {request.slots[0].value} is {status}", ("not_pending",))


def items_twice(c: Ctx) -> Request:
    request = _swap(c, "change_items", "pending", changed=True, allowed=False)
    return _forbid(request, f"the items of a pending order may be changed only once; {request.slots[0].value} was "
                            "changed already", ("changed_once",))


def payment_shipped(c: Ctx) -> Request:
    status = c.rng.choice(("shipped", "delivered"))
    request = change_payment(c, status=status)
    return _forbid(request, f"only pending orders may be modified; {request.slots[0].value} is {status}", ("not_pending",))


def pay_expired(c: Ctx) -> Request:
    request = change_payment(c, expired=True)
    method = request.changes[0].args["payment_method_id"]
    return _forbid(request, f"{method} has expired; an expired payment method is never charged or refunded",
                   ("expired",), elicit=("order_id", "payment"), reads=(f"customer:{c.customer.customer_id}",))


FORBIDDEN = {"cancel_shipped": cancel_shipped, "address_shipped": address_shipped,
             "return_final_sale": lambda c: _return(c, "return_final_sale"),
             "return_late": lambda c: _return(c, "return_late"),
             "return_undelivered": lambda c: _return(c, "return_undelivered"),
             "refund_elsewhere": lambda c: _return(c, "refund_elsewhere"),
             "exchange_late": exchange_late, "exchange_final_sale": exchange_final_sale,
             "items_shipped": items_shipped, "items_twice": items_twice,
             "payment_shipped": payment_shipped, "pay_expired": pay_expired,
             "exchange_other_product": exchange_other_product}

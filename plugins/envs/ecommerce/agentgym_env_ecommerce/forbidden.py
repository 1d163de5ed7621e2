"""Requests the policy forbids: the customer asks for them like any other, and the agent must find
out the details, look at the order, and refuse (or transfer) instead of making the change."""
from __future__ import annotations

from agentgym_service.goal import Change, Request, Slot

from .desk import address_key
from .policy import CANCEL_REASONS
from .requests import Ctx, describe_item, m_address, m_item, m_order, m_payment, payment_slot
from .world import RETURN_DAYS, new_address, pick_items


def _order_slot(c: Ctx, order) -> Slot:
    return Slot("order_id", order.order_id, c.words("order", order=order.order_id))


def cancel_shipped(c: Ctx) -> Request:
    order = c.order(c.rng.choice(("shipped", "delivered")), pick_items(c.rng, c.cat, c.rng.randint(1, 3)))
    reason = c.rng.choice(CANCEL_REASONS)
    change = Change("cancel_order", {"order_id": order.order_id, "reason": reason}, (m_order(order),),
                    {"order": frozenset({order.order_id})}, f"cancel order {order.order_id}")
    slots = (_order_slot(c, order),
             Slot("reason", "no longer needed" if reason == CANCEL_REASONS[0] else "by mistake", c.words(f"reason_{reason}")))
    return Request("cancel", c.words.all("open_cancel"), slots, (change,),
                   forbidden=f"only pending orders may be cancelled; {order.order_id} is {order.status}",
                   elicit=("order_id",), reads=(f"order:{order.order_id}",))


def address_shipped(c: Ctx) -> Request:
    order = c.order("shipped", pick_items(c.rng, c.cat, c.rng.randint(1, 3)))
    address = new_address(c.rng)
    change = Change("modify_address", {"order_id": order.order_id, "address": address_key(address)},
                    (m_order(order), *m_address(address)), {"order": frozenset({order.order_id})},
                    f"ship order {order.order_id} to {address}")
    slots = (_order_slot(c, order), Slot("address", address.split(",")[0], c.words("address", address=address)))
    return Request("change_address", c.words.all("open_address"), slots, (change,),
                   forbidden=f"only pending orders may be modified; {order.order_id} is shipped",
                   elicit=("order_id",), reads=(f"order:{order.order_id}",))


def _return(c: Ctx, kind: str) -> Request:
    n = c.rng.randint(1, 3)
    if kind == "return_final_sale":
        items = pick_items(c.rng, c.cat, 1, final_sale=True)
        items += pick_items(c.rng, c.cat, n - 1, exclude=(items[0].product_id,))
        days = c.rng.randint(1, RETURN_DAYS)
    else:
        items = pick_items(c.rng, c.cat, n, final_sale=False)
        days = c.rng.randint(RETURN_DAYS + 5, 120) if kind == "return_late" else c.rng.randint(1, RETURN_DAYS)
    card = next(m.method_id for m in c.customer.payment_methods if m.kind == "credit_card")
    order = c.order("delivered", items, days=days, payment=card)
    item = items[0].item_id
    method, rule = order.payment_method_id, None
    if kind == "refund_elsewhere":
        method = next(m.method_id for m in c.customer.payment_methods if m.kind == "paypal")
        rule = f"refunds go to the original payment method ({card}) or a gift card, not {method}"
    elif kind == "return_late":
        rule = f"items may be returned only within {RETURN_DAYS} days of delivery; {order.order_id} was delivered {days} days ago"
    else:
        rule = f"{c.cat.by_product[items[0].product_id].name} ({item}) is a final-sale item and cannot be returned"
    change = Change("return_items", {"order_id": order.order_id, "item_ids": [item], "payment_method_id": method},
                    (m_order(order), m_item(c.cat, item), m_payment(c.customer, method, card)),
                    {"order": frozenset({order.order_id}), "item": frozenset({item}), "payment": frozenset({method})},
                    f"return {describe_item(c.cat, item)} from order {order.order_id}")
    slots = (_order_slot(c, order),
             Slot("items", c.cat.by_product[items[0].product_id].name,
                  c.words("items_return", items=describe_item(c.cat, item))),
             payment_slot(c.words, c.customer, method, card))
    elicit = ("order_id", "payment") if kind == "refund_elsewhere" else ("order_id", "items")
    return Request("return", c.words.all("open_return"), slots, (change,), forbidden=rule, elicit=elicit,
                   reads=(f"order:{order.order_id}",))


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
                   elicit=("order_id", "items", "options"), reads=(f"order:{order.order_id}",))


FORBIDDEN = {"cancel_shipped": cancel_shipped, "address_shipped": address_shipped,
             "return_final_sale": lambda c: _return(c, "return_final_sale"),
             "return_late": lambda c: _return(c, "return_late"),
             "refund_elsewhere": lambda c: _return(c, "refund_elsewhere"),
             "exchange_other_product": exchange_other_product}

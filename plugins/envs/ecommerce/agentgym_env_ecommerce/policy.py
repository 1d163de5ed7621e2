"""The store's written policy: the text the agent reads, and the rules the write tools enforce.

Each ``check_*`` returns None when the policy allows the change, else the rule it breaks (one
sentence). A write the policy forbids ends the episode with reward 0; malformed calls and
unknown ids are not policy questions and only get feedback (see :mod:`.desk`).
"""
from __future__ import annotations

from .catalog import Catalog
from .records import Customer, Order
from .world import RETURN_DAYS

CANCEL_REASONS = ("no longer needed", "ordered by mistake")

POLICY = f"""\
Policy:
1. Authenticate the customer with find_customer before reading or changing anything, and serve only that customer: \
never look at another customer's profile or orders (that ends the conversation). The identity cannot change later.
2. Before each change, describe it exactly (the action, the order, the items and new options, the address or the \
payment method) and ask the customer to confirm; make only the change they said yes to. One change per confirmation.
3. Look an order up with get_order before changing it: its status decides what may be done. Only pending orders may \
be cancelled (reason "{CANCEL_REASONS[0]}" or "{CANCEL_REASONS[1]}"; the total is refunded to the original payment \
method) or changed: the address, the payment method, or item options (same product, in stock, only once).
4. Shipped, delivered or cancelled orders are not pending: they cannot be cancelled or changed.
5. Only delivered items may be returned or exchanged: within {RETURN_DAYS} days of delivery, never final-sale items. Exchange only \
for another option of the same product, in stock. A refund goes to the original payment method or a gift card of the \
customer, as they choose; an exchange's price difference is paid or refunded with a payment method of theirs they \
choose. When the customer leaves the method to us: the original payment method, or their gift card if the original \
method has expired. When they leave the new option of an exchange to us: the other option of the same product in \
stock whose price is closest to the item's (the cheaper of two as close).
6. An expired payment method (get_customer shows which) is never charged or refunded.
7. The customer's default address (their profile) may be changed on request.
8. Find out what the customer wants before deciding. Refuse what the policy forbids (or transfer_to_human), saying \
why: the rule that forbids it. Tell the customer what they ask (status, tracking number, prices, refunds and price differences)."""


def check_cancel(order: Order) -> str | None:
    if order.status != "pending":
        return f"only pending orders may be cancelled; {order.order_id} is {order.status}"
    return None


def check_modify(order: Order, *, items: bool = False) -> str | None:
    if order.status != "pending":
        return f"only pending orders may be modified; {order.order_id} is {order.status}"
    if items and order.modified:
        return f"the items of a pending order may be changed only once; {order.order_id} was changed already"
    return None


def check_delivered_items(order: Order, item_ids: list[str], catalog: Catalog, what: str) -> str | None:
    """Returns and exchanges: delivered, within the window, no final-sale item."""
    if order.status != "delivered":
        return f"only delivered orders may have items {what}; {order.order_id} is {order.status}"
    if order.delivered_days_ago > RETURN_DAYS:
        return (f"items may be {what} only within {RETURN_DAYS} days of delivery; {order.order_id} was "
                f"delivered {order.delivered_days_ago} days ago")
    for item_id in item_ids:
        product = catalog.product_of(item_id)
        if product.final_sale:
            return f"{product.name} ({item_id}) is a final-sale item and cannot be {what}"
    return None


def check_refund_method(order: Order, customer: Customer, method_id: str) -> str | None:
    method = customer.method(method_id)
    if method_id != order.payment_method_id and method.kind != "gift_card":
        return f"refunds go to the original payment method ({order.payment_method_id}) or a gift card, not {method_id}"
    return check_usable(customer, method_id)


def check_usable(customer: Customer, method_id: str) -> str | None:
    """Rule 6: no charge or refund on an expired payment method."""
    if customer.method(method_id).expired:
        return f"{method_id} has expired; an expired payment method is never charged or refunded"
    return None


def check_same_product(pairs: list[tuple[str, str]], catalog: Catalog) -> str | None:
    """Exchanges and item changes: each new item is another option of the same product."""
    for old, new in pairs:
        old_product, new_product = catalog.product_of(old), catalog.product_of(new)
        if old_product.product_id != new_product.product_id:
            return (f"an item may only be swapped for another option of the same product: {old} is a "
                    f"{old_product.name}, {new} is a {new_product.name}")
    return None

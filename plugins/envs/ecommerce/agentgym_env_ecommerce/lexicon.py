"""How the store's customer recognises questions, names changes and ids (the kit's :class:`Lexicon`)."""
from __future__ import annotations

import re

from agentgym_service.goal import Lexicon

from .desk import order_key


def _ask(pattern: str) -> re.Pattern:
    return re.compile(pattern)


ASKS = {
    "email": _ask(r"e-?mail|\bidentif|\bverify|\bauthenticat|look you up|your account (?:details|info)|locate your account"),
    "name": _ask(r"\byour (?:full |first and last )?name|\bwho (?:am i|are you|is this|i'm)|\bwho i am (?:speaking|talking)"
                 r"|name (?:and|or|&) (?:zip|postal)|name on the account"),
    "zip": _ask(r"\bzip|\bpostal|\bpost ?code"),
    "order_id": _ask(r"\b(?:order|purchase) (?:id|number|no)\b|\bwhich (?:order|purchase)\b|\bwhat (?:order|purchase)\b"
                     r"|order's (?:id|number)|\bthe order you mean"),
    "items": _ask(r"\bwhich (?:items?|products?|ones?|things?|pieces?)\b|\bwhat (?:items?|products?|things?)\b"
                  r"|\bwhat (?:do|would) you (?:like|want) to (?:return|exchange|change|swap|send back)"
                  r"|\bwhat are you (?:returning|exchanging|changing|sending back)|\bitems? (?:do|would) you"),
    "options": _ask(r"\b(?:which|what) (?:new |other )?(?:size|colou?r|option|variant|capacity|material|model|type|"
                    r"thickness|bulb|paper|version)|\bnew (?:option|item|variant|size|colou?r)|\binstead\b"
                    r"|\b(?:exchange|change|swap|switch) (?:it|them|the \w+) (?:for|to|into)\b|\bwhat would you like "
                    r"(?:it|them) (?:exchanged|changed|swapped) (?:for|to|into)"),
    "reason": _ask(r"\breason\b|\bwhy\b"),
    "payment": _ask(r"\bpayment|\brefund(?:ed)? (?:it |that )?to\b|\bwhich card\b|\bpay (?:for|with)\b|\bpaid with\b"
                    r"|\bmethod\b|\bwhere should (?:the|we send the|i send the) (?:refund|money)|\bhow would you like "
                    r"(?:to be refunded|the refund|to pay)|\bcharge"),
    "address": _ask(r"\baddress\b|\bship (?:it |them )?to\b|\bwhere (?:should|do you want|would you like) (?:it|the order|"
                    r"us to)|\bdeliver(?:ed|y)? to\b"),
    "product": _ask(r"\bwhich (?:product|item|model)\b|\bwhat (?:product|item) (?:are you|is it|do you)|\bwhat are you "
                    r"looking for|\bwhich one\b|\bwhat (?:size|colou?r|option)s? (?:are you|do you)"),
}

VERBS = {
    "cancel_order": ("cancel", "cancellation", "call off"),
    "return_items": ("return", "send back"),
    "exchange_items": ("exchange",),
    "modify_items": ("change", "swap", "switch", "replace", "modify"),
    "modify_address": ("address",),
    "modify_payment": ("payment", "pay with", "charge", "pay for"),
    "modify_customer_address": ("address",),
}
EXCLUSIVE = {"cancel_order": ("cancel", "cancellation"), "return_items": ("return",), "exchange_items": ("exchange",)}

ENTITIES = {
    "order": (re.compile(r"#?\b[Ww]\d{4}\b"), lambda m: order_key(m) or m),
    "item": (re.compile(r"\b\d{6}\b"), lambda m: m),
    "payment": (re.compile(r"\b(?:credit_card|paypal|gift_card)_\d{4}\b", re.IGNORECASE), lambda m: m.lower()),
    "tracking": (re.compile(r"\b\d{10}\b"), lambda m: m),
}

STATUS = {
    "pending": ("pending", "processing", "not shipped yet", "not yet shipped", "has not shipped", "hasn't shipped"),
    "shipped": ("shipped", "on its way", "in transit", "has been sent", "was sent", "dispatched", "out for delivery"),
    "delivered": ("delivered", "arrived", "was received"),
    "cancelled": ("cancelled", "canceled"),
}

STOCK = {"in stock": ("in stock", "available", "have it"), "out of stock": ("out of stock", "not available",
                                                                           "unavailable", "sold out", "not in stock")}

#: Why the policy forbids a request (what a refusal must say): rule 4 (not pending), 3 (items changed once), 5 (the
#: window, final sale, not delivered, where a refund goes, the same product), 6 (an expired method).
REASONS = {
    "not_pending": ("only pending", "not pending", "no longer pending", "is shipped", "has shipped", "already shipped",
                    "was shipped", "been shipped", "shipped already", "it shipped", "order shipped", "is delivered",
                    "already delivered", "has been delivered", "is cancelled", "was cancelled"),
    "changed_once": ("only once", "changed once", "changed already", "already changed", "already been changed",
                     "more than once", "a second time"),
    "window": ("30 days", "30 day", "thirty days", "return window", "exchange window", "too late"),
    "final_sale": ("final sale",),
    "undelivered": ("only delivered", "not delivered", "not been delivered", "not yet delivered", "undelivered",
                    "hasn't been delivered", "hasn't arrived", "has not arrived", "not arrived yet", "before delivery",
                    "until it is delivered", "until it's delivered"),
    "refund_method": ("original payment method or a gift card", "original payment method or gift card",
                      "original payment method or your gift card", "original method or a gift card", "refunds go to",
                      "refund goes to", "only be refunded to", "can only be refunded", "only refund to"),
    "expired": ("expired", "expiry", "expiration"),
    "same_product": ("same product", "another product", "different product", "other product"),
}

LEXICON = Lexicon(asks=ASKS, verbs=VERBS, exclusive=EXCLUSIVE, entities=ENTITIES,
                  vocabularies={"status": STATUS, "stock": STOCK}, reasons=REASONS)

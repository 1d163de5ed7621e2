"""The rule-based customer: states its request, answers what the agent asks, confirms, asks for facts.

It reads the agent's reply with keyword rules (is it asking for an email, an order id, a
reason, ...? is it asking to confirm a change?), answers every question it recognises with
what it knows (and only then: identity, order id and the details stay hidden until asked),
and words its lines from templates chosen by a generator seeded with the task, so the same
replies from the agent get the same answers. When the episode ends is decided by the env
from the store state (:mod:`.env`), not here.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from .catalog import Catalog
from .judge import is_refusal
from .scenarios import Scenario, describe_item

OPENINGS = {
    "status": ("I'd like to know the status of my order.", "Where is my order? What's its status?",
               "Has my order shipped yet? I want to check its status."),
    "cancel": ("I want to cancel an order.", "I need to cancel one of my orders, please.", "Could you cancel my order?"),
    "return": ("I'd like to return some items I received.", "I want to return something from a delivered order.",
               "I need to return an item from my order."),
    "exchange": ("I'd like to exchange an item I received.", "I want to exchange something from my order.",
                 "Can I exchange an item from a delivered order?"),
    "address": ("I need to change the shipping address of my order.", "I moved. Can you update the address on my order?",
                "Please change the delivery address of one of my orders."),
    "items": ("I want to change an item in my order before it ships.", "Can I change the option of an item in my "
              "pending order?", "I ordered the wrong option of an item and want to change it before it ships."),
}
GREETINGS = {"polite": ("Hello! ", "Hi there, "), "terse": ("", ""), "chatty": ("Hi! Hope you're having a good day. ",
                                                                               "Hello! Long week here. ")}
EMAIL = ("My email is {email}.", "It's {email}.", "Sure, my email is {email}.")
NAME_ZIP = ("I'm {name}, zip code {zip}.", "My name is {name} and my zip code is {zip}.", "This is {name}, zip {zip}.")
NO_EMAIL = "I don't remember which email I used. "
ORDER = ("The order id is {order}.", "It's order {order}.", "Order {order}.")
REASONS = {"no longer needed": ("I don't need it anymore.", "I no longer need it."),
           "ordered by mistake": ("I ordered it by mistake.", "I placed it by mistake.")}
PAYMENT = {"original": ("To the original payment method, please.", "The same method I paid with, please."),
           "gift_card": ("Please use my gift card.", "My gift card, please."),
           "paypal": ("I want it on my PayPal account.", "Please use my PayPal, not the original method.")}
ADDRESS = ("Please ship it to {address}.", "The new address is {address}.")
YES = ("Yes, please go ahead.", "Yes, that's right.", "Yes, do it.")
FACT_QUESTIONS = {"refund": "How much will I get back?", "difference": "How much is the price difference?",
                  "status": "So what's the status of my order?", "tracking": "What's the tracking number?"}
CLOSING = ("Great, thank you! Bye.", "Perfect, that's all I needed. Thanks!", "Thanks for your help, goodbye.")
ACCEPT = ("I see. Thanks anyway, bye.", "Okay, I understand. Goodbye.")

ASKS = {  # what the agent asks for, in the order the customer answers
    "identity": r"e-?mail|zip|postal|your (full )?name|verify|identif|authenticat|look you up|your account",
    "order": r"order ?(id|number|#|no\b)|which order|order's (id|number)",
    "items": r"which (items?|products?|ones?)|what (items?|products?)|items? (do|would) you",
    "options": r"(which|what) (new )?(size|colou?r|option|variant|capacity|material|model|type|thickness|bulb|paper)"
               r"|new (option|item|variant|size|colou?r)|(exchange|change|swap) (it|them|the \w+) (for|to)\b|instead\?",
    "reason": r"reason|why",
    "payment": r"payment|refund (it )?to|paypal|gift card|which card|(pay|paid) (for|the|with)|method",
    "address": r"address|ship (it )?to|where (should|do you want)",
}
CONFIRM = r"confirm|shall i|should i|do you want me|would you like me|go ahead|proceed|is that (ok|okay|correct|right|fine)" \
          r"|(ok|okay) to\b|can i (go|do)|may i"
_ORDER_ID = re.compile(r"#?\bW\d{4}\b", re.IGNORECASE)
_METHOD_ID = re.compile(r"\b(?:credit_card|paypal|gift_card)_\d{4}\b", re.IGNORECASE)


@dataclass
class Context:
    """What the env tells the customer about the episode so far."""

    order_seen: bool = False
    writes_done: bool = False
    facts_missing: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Reply:
    text: str
    confirmed: bool = False


class RuleCustomer:
    """The customer of *scenario*, played by keyword rules and templates."""

    def __init__(self, scenario: Scenario, catalog: Catalog, rng: random.Random) -> None:
        self.s, self.catalog, self.rng = scenario, catalog, rng

    def _pick(self, options: tuple[str, ...]) -> str:
        return self.rng.choice(options)

    def opening(self) -> str:
        persona = self.s.persona
        text = self._pick(GREETINGS[persona.tone]) + self._pick(OPENINGS[self.s.request])
        if persona.tone == "chatty":
            text += " " + self._pick(ORDER).format(order=self.s.order_id)
        return text

    def reply(self, message: str, ctx: Context) -> Reply:
        lower = message.lower()
        if re.search(CONFIRM, lower) and _ORDER_ID.search(message):
            return self._confirm(message)
        asked = [key for key, pattern in ASKS.items() if re.search(pattern, lower)]
        parts = [p for p in (self._answer(key, lower) for key in asked) if p]
        if parts:
            return Reply(" ".join(dict.fromkeys(parts)))
        if is_refusal(message) and self.s.intent != "forbidden":
            return Reply("Are you sure? I think that should be possible. Please check again.")
        if ctx.writes_done or (self.s.intent == "order_status" and ctx.order_seen):
            if ctx.facts_missing:
                return Reply(FACT_QUESTIONS[ctx.facts_missing[0][0]])
        if self.s.intent == "forbidden" and is_refusal(message) and not ctx.order_seen:
            return Reply("Could you at least look at my order first? " + self._pick(ORDER).format(order=self.s.order_id))
        return Reply("As I said: " + self._pick(OPENINGS[self.s.request]))

    def closing(self) -> str:
        return self._pick(CLOSING)

    def accept_refusal(self) -> str:
        return self._pick(ACCEPT)

    # -- answers -----------------------------------------------------------------------------------
    def _answer(self, key: str, lower: str) -> str | None:
        d, customer = self.s.details, self.s.customer
        if key == "identity":
            if self.s.persona.knows_email and "mail" in lower:
                return self._pick(EMAIL).format(email=customer["email"])
            prefix = NO_EMAIL if "mail" in lower and not ("name" in lower or "zip" in lower) else ""
            return prefix + self._pick(NAME_ZIP).format(name=customer["name"], zip=customer["zip"])
        if key == "order":
            return self._pick(ORDER).format(order=self.s.order_id)
        if key in ("items", "options") and "items" in d:
            return self._items_text()
        if key == "reason" and "reason" in d:
            return self._pick(REASONS[d["reason"]])
        if key == "payment" and "payment" in d:
            return self._pick(PAYMENT[d["payment"]])
        if key == "address" and "address" in d:
            return self._pick(ADDRESS).format(address=d["address"])
        return None

    def _items_text(self) -> str:
        d = self.s.details
        names = [describe_item(self.catalog, i) for i in d["items"]]
        if "other_product" in d:
            return f"I want to swap {names[0]} for a {d['other_product']}."
        if "new_options" in d:
            changes = [", ".join(f"{k} {v}" for k, v in d["new_options"][i].items()) for i in d["items"]]
            verb = "exchange" if self.s.request == "exchange" else "change"
            return " ".join(f"I'd like to {verb} {n} for {c} instead." for n, c in zip(names, changes))
        return f"I want to return {' and '.join(names)}."

    def _confirm(self, message: str) -> Reply:
        orders = {"#" + m.upper().lstrip("#") for m in _ORDER_ID.findall(message)}
        if self.s.order_id not in orders:
            return Reply(f"No, that's not the right order. It's {self.s.order_id}.")
        expected = self._expected_method()
        methods = {m.lower() for m in _METHOD_ID.findall(message)}
        if expected and methods and expected not in methods:
            return Reply("No. " + self._pick(PAYMENT[self.s.details["payment"]]))
        return Reply(self._pick(YES), confirmed=True)

    def _expected_method(self) -> str | None:
        """The payment method id the customer wants (None: no preference)."""
        d, customer = self.s.details, self.s.customer
        wanted = d.get("payment")
        if wanted is None:
            return None
        if wanted == "original":
            return self.s.db["orders"][self.s.order_id]["payment_method_id"]
        kind = "gift_card" if wanted == "gift_card" else "paypal"
        return next((m for m, info in customer["payment_methods"].items() if info["kind"] == kind), None)

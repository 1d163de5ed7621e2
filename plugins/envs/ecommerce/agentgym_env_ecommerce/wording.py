"""The customer's words: phrase pools per line, ``(iid, ood)``. Train and test draw from the first,
the OOD split only from the second (wordings never seen in training)."""
from __future__ import annotations

import random

WORDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "open_status": (("I'd like to know the status of my order.", "Where is my order? What's its status?",
                     "Has my order shipped yet?"),
                    ("Any news on my package? I'd like an update on where it stands.",
                     "Can you check how far along my purchase is?")),
    "open_cancel": (("I want to cancel an order.", "I need to cancel one of my orders, please.", "Could you cancel my order?"),
                    ("I'd like to call off a purchase I made.", "Please call off one of my orders, I don't want it anymore.")),
    "open_return": (("I'd like to return some items I received.", "I want to return something from a delivered order.",
                     "I need to return an item from my order."),
                    ("I want to send back a few things I got.", "Some stuff I received isn't working out; I'd like to "
                     "send it back for my money.")),
    "open_exchange": (("I'd like to exchange an item I received.", "I want to exchange something from my order.",
                       "Can I exchange an item from a delivered order?"),
                      ("Something I received came in the wrong variant; can I trade it for another one?",)),
    "open_address": (("I need to change the shipping address of my order.", "I moved. Can you update the address on my "
                      "order?", "Please change the delivery address of one of my orders."),
                     ("My package should go somewhere else, can you redirect one of my orders?",)),
    "open_items": (("I want to change an item in my order before it ships.", "Can I change the option of an item in my "
                    "pending order?", "I ordered the wrong option of an item and want to change it before it ships."),
                   ("Before my order goes out, I'd like a different variant of one thing in it.",)),
    "open_payment": (("I'd like to pay for one of my orders with a different payment method.",
                      "Can I change the payment method of my order?"),
                     ("I want a purchase that hasn't shipped billed to something else.",)),
    "open_profile": (("I moved and need to update the default address on my account.",
                      "Please change the address in my profile."),
                     ("My home address changed, could you update what you have on file?",)),
    "open_search": (("How much does one of your products cost? Is it in stock?", "I'd like to know the price of a "
                     "product and whether you have it."),
                    ("I'm thinking of buying something; can you check what it costs and whether you have it?",)),
    "email": (("My email is {email}.", "It's {email}."), ("You can find me under {email}.",)),
    "name": (("My name is {name}.", "I'm {name}."), ("This is {name} speaking.",)),
    "zip": (("My zip code is {zip}.", "Zip code {zip}."), ("Postal code {zip}.",)),
    "no_email": (("I don't remember which email I used. I'm {name}, zip code {zip}.",),
                 ("No idea which email that was, sorry. This is {name}, zip code {zip}.",)),
    "order": (("The order id is {order}.", "It's order {order}."), ("You'll find it under {order}.",)),
    "reason_no longer needed": (("It's no longer needed.", "I don't need it anymore, it's no longer needed."),
                                ("Turns out it's no longer needed.",)),
    "reason_ordered by mistake": (("I ordered it by mistake.", "I placed it by mistake."),
                                  ("That purchase was made by mistake.",)),
    "items_return": (("I want to return {items}.", "It's {items}."), ("The pieces I'm sending back: {items}.",)),
    "items_swap": (("It's {items}.", "I mean {items}."), ("The piece in question is {items}.",)),
    "options": (("I'd like {options} instead.", "{options}, please."), ("Could I get {options} instead?",)),
    "other_product": (("I'd like a {product} instead.",), ("Rather than that, give me a {product}.",)),
    "pay_original": (("To the original payment method, please.", "The original payment method, please."),
                     ("Put it back on the original payment method.",)),
    "pay_gift_card": (("Please use my gift card.", "My gift card, please."), ("The gift card on my account.",)),
    "pay_paypal": (("I want it on my PayPal account.", "Please use my PayPal."), ("To PayPal, if you would.",)),
    "pay_card": (("Please use my card ending in {last4}.",), ("Bill the card ending in {last4}.",)),
    "address": (("The new address is {address}.", "Please ship it to {address}."), ("Send it to {address} instead.",)),
    "profile_address": (("My new address is {address}.",), ("I live at {address} now.",)),
    "product": (("The {product} in {options}.", "I'm interested in the {product}, {options}."),
                ("I'm after the {product}, {options}.",)),
    "q_refund": (("How much will I get back?",), ("And what's my refund going to be?",)),
    "q_difference": (("How much is the price difference?",), ("What's the difference in price?",)),
    "q_status": (("So what's the status of my order?",), ("So where does it stand?",)),
    "q_tracking": (("What's the tracking number?",), ("Can I get the tracking code?",)),
    "q_price": (("So how much does it cost?",), ("And the price?",)),
    "q_stock": (("Is it in stock?",), ("Do you have it available?",)),
}


class Words:
    """Draws a customer's lines from one pool (``iid`` or ``ood``) with the task's generator."""

    def __init__(self, rng: random.Random, wording: str) -> None:
        self.rng, self.pool = rng, 1 if wording == "ood" else 0

    def __call__(self, key: str, **fields: object) -> str:
        return self.rng.choice(WORDS[key][self.pool]).format(**fields)

    def all(self, key: str) -> tuple[str, ...]:
        return WORDS[key][self.pool]

"""The rule-based customer: hides what it knows until asked, answers every question it recognises,
confirms only the right change, asks for the facts it wants, and words its lines reproducibly."""
from __future__ import annotations

import random

import pytest

from agentgym_env_ecommerce.catalog import catalog
from agentgym_env_ecommerce.customer import Context, RuleCustomer
from agentgym_env_ecommerce.judge import is_refusal, told
from agentgym_env_ecommerce.scenarios import scenario


def customer_for(kind: str, where=lambda s: True) -> RuleCustomer:
    s = next(s for s in map(scenario, range(400)) if s.kind == kind and where(s))
    return RuleCustomer(s, catalog(0), random.Random(s.task_id))


def test_the_opening_states_the_request_and_hides_the_details():
    for kind in ("cancel", "return", "exchange", "change_address", "change_items", "order_status"):
        c = customer_for(kind, lambda s: s.persona.tone != "chatty")
        opening = c.opening()
        assert c.s.order_id not in opening and c.s.customer["email"] not in opening
        assert c.s.customer["zip"] not in opening and "@" not in opening
    chatty = customer_for("cancel", lambda s: s.persona.tone == "chatty")
    assert chatty.s.order_id in chatty.opening()


def test_answers_every_recognised_question_at_once():
    c = customer_for("return", lambda s: s.persona.knows_email)
    s = c.s
    text = c.reply("Could you give me your email, the order id, which items you want to return, and the "
                   "refund payment method?", Context()).text
    assert s.customer["email"] in text and s.order_id in text
    assert all(f"the {catalog(0).product_of(i).name} (" in text for i in s.details["items"])
    assert ("original payment method" in text or "same method" in text or "gift card" in text)


def test_a_customer_without_its_email_gives_name_and_zip():
    c = customer_for("cancel", lambda s: not s.persona.knows_email)
    text = c.reply("What is your email address?", Context()).text
    assert text.startswith("I don't remember which email I used.")
    assert c.s.customer["name"] in text and c.s.customer["zip"] in text


@pytest.mark.parametrize("kind, question, key", [
    ("cancel", "Why do you want to cancel? What's the reason?", "reason"),
    ("change_address", "What is the new shipping address?", "address"),
    ("exchange", "Which option would you like instead?", "new_options"),
])
def test_details_are_given_when_asked(kind, question, key):
    c = customer_for(kind)
    text = c.reply(question, Context()).text
    value = c.s.details[key]
    if key == "reason":
        assert ("mistake" in text) == (value == "ordered by mistake")
    elif key == "address":
        assert value in text
    else:
        assert all(f"{k} {v}" in text for change in value.values() for k, v in change.items())


def test_confirms_only_the_right_order_and_payment_method():
    c = customer_for("return", lambda s: s.details["payment"] == "gift_card")
    s = c.s
    assert c.reply("Shall I go ahead? Please confirm.", Context()).confirmed is False  # no order named: a question
    wrong = c.reply("I will return it from order #W0000. Do you confirm?", Context())
    assert not wrong.confirmed and s.order_id in wrong.text and wrong.text.startswith("No")
    original = s.db["orders"][s.order_id]["payment_method_id"]
    no = c.reply(f"I will refund it to {original} for order {s.order_id}. Do you confirm?", Context())
    assert not no.confirmed and "gift card" in no.text
    gift = next(m for m, i in s.customer["payment_methods"].items() if i["kind"] == "gift_card")
    yes = c.reply(f"I will refund it to {gift} for order {s.order_id}. Do you confirm?", Context())
    assert yes.confirmed and yes.text.startswith("Yes")


def test_asks_for_missing_facts_and_pushes_back_on_refusals():
    c = customer_for("cancel")
    ctx = Context(order_seen=True, writes_done=True, facts_missing=list(c.s.facts))
    assert c.reply("All done!", ctx).text == "How much will I get back?"
    assert "Are you sure?" in c.reply("Sorry, I can't do that.", Context(order_seen=True)).text
    assert c.reply("Hmm.", Context()).text.startswith("As I said: ")


def test_same_replies_give_the_same_lines():
    lines = []
    for _ in range(2):
        c = customer_for("exchange")
        lines.append([c.opening(), c.reply("Your email please?", Context()).text, c.reply("Which item?", Context()).text])
    assert lines[0] == lines[1]


@pytest.mark.parametrize("fact, text, expected", [
    (("status", "shipped"), "Your order has shipped.", True),
    (("status", "shipped"), "It is pending or shipped.", False),
    (("status", "cancelled"), "The order was canceled.", True),
    (("refund", "$54.20"), "You get 54.2 dollars back", True),
    (("refund", "$54.20"), "You get $54.02 back", False),
    (("refund", "$1234.50"), "A refund of $1,234.50.", True),
    (("tracking", "1234567890"), "Tracking: 12345-67890", True),
])
def test_facts_are_read_from_replies(fact, text, expected):
    assert told(fact, text) is expected


@pytest.mark.parametrize("text, expected", [
    ("I'm sorry, but I cannot cancel a shipped order.", True),
    ("Unfortunately that isn't possible under our policy: our policy doesn't allow it.", True),
    ("I can't find that order, could you check the id?", True),
    ("Sure, I can do that for you.", False),
    ("It's no longer needed? Then I will cancel it.", False),
])
def test_refusals(text, expected):
    assert is_refusal(text) is expected

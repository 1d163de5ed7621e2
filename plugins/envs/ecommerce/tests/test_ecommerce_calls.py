"""Reading tool calls the way small models write them, and the feedback for calls that cannot be read."""
from __future__ import annotations

import pytest

from agentgym_env_ecommerce.calls import TOOLS, Call, CallError, parse_call
from agentgym_env_ecommerce.env import ECommerceServiceEnv


@pytest.mark.parametrize("text, expected", [
    ('get_order(order_id="#W1001")', Call("get_order", {"order_id": "#W1001"})),
    ("get_order('#W1001')", Call("get_order", {"order_id": "#W1001"})),
    ("get_order(order_id=#W1001)", Call("get_order", {"order_id": "#W1001"})),
    ("get_order(W1001", Call("get_order", {"order_id": "W1001"})),
    ('functions.get_order(order_id="#W1001") to see the status', Call("get_order", {"order_id": "#W1001"})),
    ('Thought: check it\nAction: `get_order(order_id: "#W1001")`', Call("get_order", {"order_id": "#W1001"})),
    ('respond("Hi (there)!")', Call("respond", {"message": "Hi (there)!"})),
    ('I will look it up. get_order(order_id="#W1001")', Call("get_order", {"order_id": "#W1001"})),
    ('respond("Hi!")\nObservation: Customer: (made up)', Call("respond", {"message": "Hi!"})),
    ("respond('I can't do that')", Call("respond", {"message": "I can't do that"})),
    ("respond(message=Sorry, which order?)", Call("respond", {"message": "Sorry, which order?"})),
    ('find_customer("ava@example.com")', Call("find_customer", {"email": "ava@example.com"})),
    ('find_customer("Ava Lee", 62704)', Call("find_customer", {"name": "Ava Lee", "zip": "62704"})),
    ('return_items("#W1", [12345, "23456"], "gift_card_1")',
     Call("return_items", {"order_id": "#W1", "item_ids": ["12345", "23456"], "payment_method_id": "gift_card_1"})),
    ('return_items(order_id="#W1", item_ids="12345, 23456", payment_method_id="credit_card_1")',
     Call("return_items", {"order_id": "#W1", "item_ids": ["12345", "23456"], "payment_method_id": "credit_card_1"})),
    ('exchange_items(order_id="#W1", item_ids=12345, new_item_ids=["54321"], payment_method_id="paypal_2")',
     Call("exchange_items", {"order_id": "#W1", "item_ids": ["12345"], "new_item_ids": ["54321"],
                             "payment_method_id": "paypal_2"})),
])
def test_loose_calls_are_read(text, expected):
    assert parse_call(text) == expected


@pytest.mark.parametrize("text, feedback", [
    ("get_ordr(order_id='#W1')", "unknown tool 'get_ordr'. Did you mean get_order?"),
    ("lookup(x=1)", "Tools: respond(message); find_customer(email) or find_customer(name, zip); get_customer"),
    ('get_order(id="#W1")', "get_order has no argument 'id' (did you mean order_id?); write get_order(order_id)"),
    ("get_order()", 'get_order is missing order_id; write get_order(order_id="...")'),
    ('cancel_order(order_id="#W1")', 'cancel_order is missing reason; write cancel_order(order_id="...", reason="...")'),
    ('get_order("#W1", "#W2")', "get_order takes 1 argument(s), got 2"),
    ("get_order", "get_order needs its arguments in parentheses: get_order(order_id)"),
    ("Hello, how can I help?", "is not a tool call. Write one tool call, e.g. get_order"),
    ('find_customer(name="Ava Lee")', 'find_customer needs email="..." or name="First Last" and zip="12345"'),
    ("", "the action is empty"),
    ('return_items(order_id="#W1", payment_method_id="x")', 'item_ids=["..."]'),
])
def test_malformed_calls_say_what_is_wrong_and_what_is_valid(text, feedback):
    with pytest.raises(CallError) as exc:
        parse_call(text)
    assert feedback in str(exc.value)


def test_env_answers_malformed_calls_with_feedback_and_no_change():
    env = ECommerceServiceEnv()
    env.reset(task_id=1)
    before = env.db.copy()
    for text, feedback in [("get_ordr(order_id='#W1')", "Did you mean get_order?"),
                           ("Sure, let me help", 'respond("...")'),
                           ("cancel_order(order_id=\"#W1\")", "missing reason")]:
        obs, reward, done, info = env.step(text)
        assert obs.startswith("Invalid action: ") and feedback in obs
        assert info["invalid_action"] and not done and reward == 0.0
    assert env.db == before


def test_every_tool_is_in_the_instruction():
    for tool in TOOLS.values():
        assert tool.signature() in ECommerceServiceEnv.instruction

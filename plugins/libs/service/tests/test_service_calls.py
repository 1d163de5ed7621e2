"""One action, one call: text calls, JSON function calls, and the refusals (prose, several calls, junk)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_service.calls import CallError, parse_call
from library_env import TOOLS
from agentgym_service.tools import Param, Tool, ToolSet

SHOP = ToolSet((
    Tool("respond", "talk", (Param("message", "text"),), kind="respond"),
    Tool("get_order", "an order", (Param("order_id", "id"),)),
    Tool("return_items", "return", (Param("order_id", "id"), Param("item_ids", "ids", "array"),
                                    Param("payment_method_id", "method")), kind="write"),
    Tool("cancel_order", "cancel", (Param("order_id", "id"), Param("reason", "why", enum=("no longer needed",))),
         kind="write"),
))


@pytest.mark.parametrize("action, args", [
    ('get_order(order_id="#W1234")', {"order_id": "#W1234"}),
    ("get_order('#W1234')", {"order_id": "#W1234"}),
    ("get_order(#W1234)", {"order_id": "#W1234"}),
    ("Thought: look it up.\nAction: get_order(order_id: \"#W1\")", {"order_id": "#W1"}),
    ("`get_order(W1)`", {"order_id": "W1"}),
    ("functions.get_order(order_id=\"#W1\")", {"order_id": "#W1"}),
    ('{"name": "get_order", "arguments": {"order_id": "#W1"}}', {"order_id": "#W1"}),
    ('{"name": "get_order", "arguments": "{\\"order_id\\": \\"#W1\\"}"}', {"order_id": "#W1"}),
    ('<tool_call>\n{"name": "get_order", "parameters": {"order_id": "#W1"}}\n</tool_call>', {"order_id": "#W1"}),
    ('[{"type": "function", "function": {"name": "get_order", "arguments": {"order_id": "#W1"}}}]', {"order_id": "#W1"}),
])
def test_accepted_forms(action, args):
    assert parse_call(action, SHOP).args == args


def test_lists_enums_and_loose_respond():
    call = parse_call('return_items("#W1", ["11", "12"], payment_method_id="gift_card_1")', SHOP)
    assert call.args == {"order_id": "#W1", "item_ids": ["11", "12"], "payment_method_id": "gift_card_1"}
    assert parse_call('return_items(order_id="#W1", item_ids="11, 12", payment_method_id=p)', SHOP).args["item_ids"] == [
        "11", "12"]
    assert parse_call('cancel_order("#W1", "No longer needed")', SHOP).args["reason"] == "no longer needed"
    for ids in ("12", "[12]", '"12"', "[\"12\"]"):  # one id, bare or quoted, alone or in a list, in both forms
        assert parse_call(f'return_items("#W1", {ids}, "p")', SHOP).args["item_ids"] == ["12"], ids
        assert parse_call('{"name": "return_items", "arguments": {"order_id": "#W1", "item_ids": %s, '
                          '"payment_method_id": "p"}}' % ids, SHOP).args["item_ids"] == ["12"], ids
    assert parse_call('respond(Hello "there, how can I help?)', SHOP).args["message"] == 'Hello "there, how can I help?'
    assert parse_call('respond("It\'s \\"fine\\"")', SHOP).args["message"] == 'It\'s "fine"'


@pytest.mark.parametrize("value, kind", [
    ("12345", "the number 12345"), ("1.5", "the number 1.5"), ('{"a": 1}', "an object"), ('["a"]', "a list"),
    ("true", "a boolean"),
])
def test_wrong_type_refused_alike_in_both_forms(value, kind):
    """A string argument given a number, object, list or boolean is refused with one message, whether the
    call is text (keyword, positional, or a one-string tool's raw text) or JSON (issue 36 item 7)."""
    messages = set()
    for action in (f"respond(message={value})", f"respond({value})",
                   f'{{"name": "respond", "arguments": {{"message": {value}}}}}',
                   f"get_order(order_id={value})", f'{{"name": "get_order", "arguments": {{"order_id": {value}}}}}'):
        with pytest.raises(CallError) as err:
            parse_call(action, SHOP)
        assert f"must be a string, got {kind}" in str(err.value), action
        messages.add(str(err.value))
    assert len(messages) == 2  # one for respond's message, one for get_order's order_id
    # quoted, the same characters are text
    assert parse_call(f"respond(message={value!r})", SHOP).args == {"message": value}


@pytest.mark.parametrize("action, says", [
    ("", "empty"), ("hello there", "is not a tool call"), ("get_order", "needs its arguments in parentheses"),
    ("get_ordr(1)", "Did you mean get_order?"), ("get_order(id=1)", "has no argument 'id'"),
    ('Sure, I will not call cancel_order("#W1", "no longer needed")', "was not run"),
    ("Action: get_order(1)\nAction: get_order(2)", "one action per turn"),
    ('[{"name": "get_order", "arguments": {}}, {"name": "respond", "arguments": {}}]', "one action per turn"),
    ("get_order(1) get_order(2)", "write only the call"),
    ('{"name": "get_order", "arguments": {"order_id": "#W1"}} and more', "write only the call"),
    ('get_order("#W1"', "no closing parenthesis"), ("cancel_order(#W1, reason=maybe)", "must be one of"),
    ('return_items("#W1", [["1"]], "p")', "lists inside lists"), ('return_items("#W1", {"a": 1}, "p")', "objects"),
    ('{"name": "get_order", "arguments": {"order_id": {"x": {"y": 1}}}}', "must be a string"),
    ('{"name": "return_items", "arguments": {"order_id": "#W1", "item_ids": [{"a": 1}], "payment_method_id": "p"}}',
     "must be a list of ids"),
    ("{" * 50, "does not parse"), ('{"name": 5}', 'has no "name"'),
])
def test_refused_with_a_message(action, says):
    with pytest.raises(CallError, match=None) as err:
        parse_call(action, SHOP)
    assert says in str(err.value)


def test_length_cap_and_long_hostile_inputs_stay_errors():
    with pytest.raises(CallError, match="limit is 4000"):
        parse_call("respond(" + "(" * 5000 + ")", SHOP)
    for hostile in ("return_items(" + "a," * 6000 + ")", "respond(" + '"' * 12000, "Action:" * 3000, "[" * 12000):
        with pytest.raises(CallError):
            parse_call(hostile, SHOP, max_chars=50_000)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | st.sampled_from(['get_order(', 'respond("', '{"name": "get_order", "arguments": ',
                                                 "Action: return_items(", "<tool_call>"]).flatmap(
    lambda head: st.text(max_size=200).map(lambda tail: head + tail)))
def test_any_text_is_a_call_or_a_call_error(action):
    try:
        call = parse_call(action, SHOP)
    except CallError as exc:
        assert str(exc)
    else:
        assert call.tool in SHOP


def test_tool_schemas_are_openai_functions():
    schema = TOOLS["renew_loan"].schema()
    assert schema == {"type": "function", "function": {"name": "renew_loan", "description": "renew a loan by 14 days",
                      "parameters": {"type": "object", "properties": {"loan_id": {"type": "string",
                                                                                  "description": "such as L12"}},
                                     "required": ["loan_id"]}}}

"""The episode: contract, the reference agent wins every test task, the random agent does not, and the
ways an episode ends with 0 (forbidden changes, unconfirmed or unwanted changes, transfers, the turn limit)."""
from __future__ import annotations

import collections
import random

import pytest

from agentgym_core.testing import check_env
from agentgym_env_ecommerce.agents import RandomAgent, ReferenceAgent, RefusingAgent, call, play, respond
from agentgym_env_ecommerce.env import ECommerceServiceEnv
from agentgym_env_ecommerce.scenarios import FORBIDDEN_KINDS, INTENTS


@pytest.fixture(scope="module")
def env():
    e = ECommerceServiceEnv()
    yield e
    e.close()


def task_of(env, kind: str, split: str = "test", where=lambda s: True) -> int:
    """The first task id of *split* whose scenario has *kind* (an intent or a forbidden kind)."""
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        if env.scenario.kind == kind and where(env.scenario):
            return task_id
    raise LookupError(kind)


def identify(env) -> None:
    """Identify the customer and look at the order, as an agent would after asking."""
    s = env.scenario
    for action in (call("find_customer", email=s.customer["email"]), call("get_order", order_id=s.order_id)):
        obs, reward, done, info = env.step(action)
        assert not done and not info["action_failed"], obs


def test_contract():
    check_env(ECommerceServiceEnv, actions=('respond("Hello, how can I help?")', 'get_order(order_id="#W1234")',
                                            "dance", 'find_customer(email="nobody@example.com")'))


def test_reference_agent_solves_every_test_task(env):
    solved, kinds = collections.Counter(), set()
    for task_id in env.splits()["test"]:
        reward, info, steps = play(env, task_id, ReferenceAgent())
        assert reward == 1.0 and info["success"] and info["db_match"], (task_id, steps[-3:], info)
        assert not any("Invalid action" in obs for _, obs in steps)
        solved[env.category(task_id)] += 1
        kinds.add(env.scenario.kind)
    assert set(solved) == set(INTENTS) and kinds >= set(FORBIDDEN_KINDS)


def test_random_agent_is_near_zero(env):
    rng = random.Random(0)
    test = env.splits()["test"]
    wins = sum(play(env, task_id, RandomAgent(rng))[0] for task_id in test[::2])
    assert wins / len(test[::2]) < 0.05


def test_refusing_everything_wins_only_the_forbidden_requests(env):
    for task_id in env.splits()["test"][:28]:
        reward, info, _ = play(env, task_id, RefusingAgent())
        assert reward == (1.0 if env.category(task_id) == "forbidden" else 0.0), (task_id, info)


def test_forbidden_refund_ends_with_zero(env):
    env.reset(task_id=task_of(env, "refund_elsewhere"))
    s = env.scenario
    paypal = next(m for m, info in s.customer["payment_methods"].items() if info["kind"] == "paypal")
    item = s.details["items"][0]
    identify(env)
    obs, *_ = env.step(respond(f"I will return {item} from {s.order_id} with a refund to {paypal}. Do you confirm?"))
    assert obs.startswith("Customer: Yes")
    obs, reward, done, info = env.step(call("return_items", order_id=s.order_id, item_ids=[item],
                                            payment_method_id=paypal))
    assert done and reward == 0.0 and not info["success"]
    assert "Forbidden by the policy: refunds go to the original payment method" in obs
    assert info["forbidden"].startswith("refunds go to") and info["end_reason"].startswith("forbidden")


@pytest.mark.parametrize("kind, action, rule", [
    ("return_final_sale", "return", "is a final-sale item and cannot be returned"),
    ("cancel_shipped", "cancel", "only pending orders may be cancelled"),
    ("address_shipped", "address", "only pending orders may be modified"),
    ("return_late", "return", "only within 30 days of delivery"),
])
def test_other_forbidden_changes_end_with_zero(env, kind, action, rule):
    env.reset(task_id=task_of(env, kind))
    s = env.scenario
    identify(env)
    env.step(respond(f"Shall I go ahead with order {s.order_id}?"))
    order = s.db["orders"][s.order_id]
    tool = {"return": call("return_items", order_id=s.order_id, item_ids=s.details.get("items"),
                           payment_method_id=order["payment_method_id"]),
            "cancel": call("cancel_order", order_id=s.order_id, reason="no longer needed"),
            "address": call("modify_address", order_id=s.order_id, address="1 Main St, Salem, 97301")}[action]
    obs, reward, done, info = env.step(tool)
    assert done and reward == 0.0 and rule in obs and rule in info["forbidden"]


def test_a_change_without_confirmation_ends_with_zero(env):
    env.reset(task_id=task_of(env, "cancel"))
    s = env.scenario
    identify(env)
    obs, reward, done, info = env.step(call("cancel_order", order_id=s.order_id, reason=s.details["reason"]))
    assert done and reward == 0.0 and "explicit confirmation" in info["forbidden"]
    assert env.db == s.db  # nothing was applied


def test_a_change_the_customer_did_not_ask_for_ends_with_zero(env):
    env.reset(task_id=task_of(env, "cancel"))
    s = env.scenario
    identify(env)
    env.step(respond(f"Shall I cancel order {s.order_id}? Please confirm."))
    wrong = next(r for r in ("no longer needed", "ordered by mistake") if r != s.details["reason"])
    obs, reward, done, info = env.step(call("cancel_order", order_id=s.order_id, reason=wrong))
    assert done and reward == 0.0 and "That's not what I asked for" in obs
    assert info["end_reason"] == "the change is not what the customer asked for" and not info["db_match"]


def test_transfers(env):
    env.reset(task_id=task_of(env, "return"))
    obs, reward, done, info = env.step('transfer_to_human(summary="wants a return")')
    assert done and reward == 0.0 and info["end_reason"] == "transferred a request the policy allows the agent to handle"
    env.reset(task_id=task_of(env, "cancel_shipped"))
    obs, reward, done, info = env.step('transfer_to_human(summary="x")')
    assert done and reward == 0.0 and "before looking" in info["end_reason"]
    env.reset(task_id=task_of(env, "cancel_shipped"))
    identify(env)
    obs, reward, done, info = env.step('transfer_to_human(summary="wants to cancel a shipped order")')
    assert done and reward == 1.0 and info["success"]


def test_refusal_counts_only_for_forbidden_requests_after_looking(env):
    env.reset(task_id=task_of(env, "exchange_other_product"))
    obs, reward, done, _ = env.step(respond("Sorry, I cannot do that."))
    assert not done and "look at my order first" in obs
    identify(env)
    obs, reward, done, info = env.step(respond("I'm afraid the policy does not allow swapping for another product."))
    assert done and reward == 1.0 and info["success"] and obs.startswith("Customer: ")
    env.reset(task_id=task_of(env, "return"))
    identify(env)
    obs, reward, done, _ = env.step(respond("Sorry, I cannot do that."))
    assert not done and reward == 0.0 and "Are you sure?" in obs


def test_facts_must_be_told_after_looking_at_the_order(env):
    env.reset(task_id=task_of(env, "order_status", where=lambda s: s.facts[0][1] == "shipped"))
    s = env.scenario
    tracking = s.db["orders"][s.order_id]["tracking"]
    obs, reward, done, _ = env.step(respond(f"It is shipped, tracking {tracking}."))  # a guess, before looking
    assert not done
    identify(env)
    obs, reward, done, info = env.step(respond("It is pending, shipped or delivered."))
    assert not done and "status" in obs.lower()
    obs, reward, done, info = env.step(respond("Your order is shipped."))
    assert not done and obs == "Customer: What's the tracking number?"
    obs, reward, done, info = env.step(respond(f"The tracking number is {tracking}."))
    assert done and reward == 1.0 and info["facts_missing"] == []


def test_lookups_need_the_identified_customer(env):
    env.reset(task_id=task_of(env, "cancel"))
    s = env.scenario
    obs, reward, done, info = env.step(call("get_order", order_id=s.order_id))
    assert "Identify the customer first" in obs and info["action_failed"] and not info["invalid_action"]
    other = next(o for o in s.db["orders"] if o not in s.customer["orders"])
    env.step(call("find_customer", name=s.customer["name"], zip=s.customer["zip"]))
    obs, *_ = env.step(call("get_order", order_id=other))
    assert "belongs to another customer" in obs
    obs, *_ = env.step(call("get_order", order_id="W" + s.order_id[2:]))
    assert obs.startswith(f"Order {s.order_id}: pending")
    obs, *_ = env.step(call("get_customer", customer_id="someone_else_1234"))
    assert "only look at the identified customer" in obs
    obs, *_ = env.step(call("find_customer", email="nobody@example.com"))
    assert "No customer with email nobody@example.com" in obs


def test_bad_arguments_of_writes_get_feedback(env):
    env.reset(task_id=task_of(env, "exchange"))
    s = env.scenario
    identify(env)
    item = s.details["items"][0]
    env.step(respond(f"Do you confirm the exchange in {s.order_id}?"))
    cases = [
        (call("exchange_items", order_id=s.order_id, item_ids=["11111"], new_item_ids=["22222"],
              payment_method_id="credit_card_0000"), "not in order"),
        (call("exchange_items", order_id=s.order_id, item_ids=[item], new_item_ids=["22222", "3"],
              payment_method_id="x"), "one new item id per item"),
        (call("exchange_items", order_id=s.order_id, item_ids=[item], new_item_ids=[item],
              payment_method_id=s.db["orders"][s.order_id]["payment_method_id"]), "the item already ordered"),
        (call("exchange_items", order_id=s.order_id, item_ids=[item], new_item_ids=[item],
              payment_method_id="credit_card_0000"), "is not a payment method of"),
    ]
    for action, feedback in cases:
        obs, reward, done, info = env.step(action)
        assert feedback in obs and info["invalid_action"] and not done, (action, obs)
    assert env.db == s.db


def test_turn_limit_ends_the_episode():
    env = ECommerceServiceEnv(max_turns=3)
    env.reset(task_id=0)
    for _ in range(2):
        assert not env.step(respond("Hello!"))[2]
    obs, reward, done, info = env.step(respond("Hello!"))
    assert done and reward == 0.0 and info["end_reason"] == "turn limit" and "3 turns" in obs
    obs, reward, done, info = env.step(respond("Hello?"))
    assert done and "over" in obs


def test_confirmation_can_be_switched_off():
    env = ECommerceServiceEnv(require_confirmation=False)
    env.reset(task_id=task_of(env, "cancel"))
    s = env.scenario
    identify(env)
    obs, reward, done, info = env.step(call("cancel_order", order_id=s.order_id, reason=s.details["reason"]))
    assert not done and "cancelled" in obs
    obs, reward, done, info = env.step(respond(f"Done, {s.facts[0][1]} is refunded."))
    assert done and reward == 1.0


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="before reset"):
        ECommerceServiceEnv().step('respond("hi")')

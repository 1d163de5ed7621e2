"""ecommerce on the service kit: every point of issue 26 that an outsider could game, and the expert winning."""
from __future__ import annotations

import collections

import pytest

from agentgym_core.testing import check_env
from agentgym_env_ecommerce.agents import ExpertAgent, MisdescribingExpert, call, respond
from agentgym_env_ecommerce.env import ECommerceServiceEnv
from agentgym_service.play import play


@pytest.fixture(scope="module")
def env():
    return ECommerceServiceEnv()


def first_task(env, intent, split="test", where=lambda e: True):
    """The first task of category *intent* whose first request is of that kind (allowed; for ``forbidden``: a
    forbidden one), reset; *where* narrows further."""
    def opens(e):
        first = e.task.goal.requests[0]
        return bool(first.forbidden) if intent == "forbidden" else first.kind == intent and not first.forbidden

    for task_id in env.splits()[split]:
        if env.category(task_id) == intent:
            env.reset(task_id=task_id)
            if opens(env) and where(env):
                return task_id
    raise LookupError(intent)


def test_contract_options_and_splits():
    check_env(ECommerceServiceEnv, task_ids=[0, 1, 1400])
    env = ECommerceServiceEnv()
    sizes = {k: len(v) for k, v in env.splits().items()}
    assert sizes["train"] + sizes["test"] == 1400 and sizes["ood"] == 200 and 200 < sizes["test"] < 360
    assert ECommerceServiceEnv(intents="cancel,return").category(3) == "return"
    from agentgym_core.errors import ConfigError
    with pytest.raises(ConfigError, match="unknown intent"):
        ECommerceServiceEnv(intents="refund")


@pytest.mark.parametrize("split", ["test", "ood"])
def test_the_expert_solves_every_task(env, split):
    failed = {t: play(env, t, ExpertAgent())[1].get("end_reason") for t in env.splits()[split]}
    assert {t: r for t, r in failed.items() if r != "the user's goal is met"} == {}


def test_every_task_needs_an_allowed_write_and_many_need_several(env):
    writes = collections.Counter()
    kinds = set()
    for task_id in env.splits()["test"]:
        env.reset(task_id=task_id)
        requests = env.task.goal.requests
        writes[sum(len(r.changes) for r in requests if not r.forbidden)] += 1
        kinds |= {c.tool for r in requests for c in r.changes}
    assert writes[0] == 0 and (writes[2] + writes[3]) / sum(writes.values()) > 0.4
    assert {"modify_payment", "modify_customer_address", "modify_items", "exchange_items"} <= kinds


def test_the_expert_with_a_misdescribing_confirmation_never_wins(env):
    results = [play(env, t, MisdescribingExpert(t))[0] for t in env.splits()["test"][:60]]
    assert sum(results) == 0


def test_details_come_only_when_asked_and_varied_questions_are_understood(env):
    first_task(env, "return")
    goal = env.task.goal
    first = env.reset(task_id=env.task.task_id)
    order = goal.requests[0].slots[0].value
    assert order not in first and "@" not in first  # the opening names no id
    asks = {"Who am I speaking with?": goal.name, "What would you like to return?": goal.requests[0].slots[1].value,
            "Where should the refund go?": goal.requests[0].slots[2].value, "What's the order number?": order}
    for question, expect in asks.items():
        obs = env.step(respond(question))[0]
        assert "As I said" not in obs and expect in obs, (question, obs)
    obs = env.step(respond("Lovely weather on Mars?"))[0]
    assert any(w in obs for w in ("understand", "not sure what", "lost", "don't follow")), obs


def serve_until_confirmation(env, task_id):
    """The expert's actions up to (not including) its first confirmation question."""
    agent, obs = ExpertAgent(), env.reset(task_id=task_id)
    while True:
        action = agent(obs)
        if "Do you confirm?" in action:
            return agent, action
        obs = env.step(action)[0]


@pytest.mark.parametrize("rewrite, answer", [
    (lambda a, oid: a.replace("Do you confirm?", "and close your account. Do you confirm?"), "anything else"),
    (lambda a, oid: f'respond("May I go ahead with order {oid}?")', "exactly"),
    (lambda a, oid: a.replace(oid, "#W0001"), "It's order"),
    (lambda a, oid: a.replace(oid, "W" + oid[2:]), "Yes"),            # the id without the # is the same order
    (lambda a, oid: a.replace(oid, f"order {oid[2:]}"), "Yes"),
])
def test_a_confirmation_counts_only_if_it_describes_the_change(env, rewrite, answer):
    task_id = first_task(env, "cancel")
    agent, action = serve_until_confirmation(env, task_id)
    oid = agent.order["order_id"]
    obs = env.step(rewrite(action, oid).replace("order order", "order"))[0]
    assert answer in obs, obs
    if answer != "Yes":
        obs, reward, done, info = env.step(call("cancel_order", order_id=oid, reason="no longer needed"))
        assert done and reward == 0.0


def status_task(env):
    task_id = first_task(env, "order_status", where=lambda e: e.task.goal.requests[0].outputs[0].value == "pending"
                         and len(e.task.goal.requests) > 1)
    agent = ExpertAgent()
    obs = env.reset(task_id=task_id)
    for _ in range(3):  # ask, authenticate, look up
        obs = env.step(agent(obs))[0]
    return task_id


def test_status_is_judged_on_the_first_answer_and_a_list_of_states_is_none(env):
    status_task(env)
    obs = env.step(respond("It is pending, shipped, delivered or cancelled."))[0]  # the answer: it names every state
    assert "one more thing" in obs or "also need" in obs or "another thing" in obs  # the customer moves on ...
    assert env.judge.missing_outputs(0) and not env.judge.resolved(0)  # ... and the request failed
    status_task(env)
    env.step(respond("Your order is still pending; it has not shipped yet."))
    assert env.judge.resolved(0)


def test_listing_amounts_tells_none_and_the_customer_does_not_ask_again(env):
    task_id = first_task(env, "cancel")
    agent, action = serve_until_confirmation(env, task_id)
    total = agent.order["total"]
    obs = env.step(action.replace(f"${total:.2f}", "the total"))[0]  # the amount not told yet
    assert obs.startswith("Customer: Yes")
    env.step(call("cancel_order", order_id=agent.order["order_id"], reason="ordered by mistake" if "mistake" in
                  agent.said else "no longer needed"))
    obs = env.step(respond("Done, it is cancelled."))[0]
    assert "How much" in obs or "refund going to be" in obs  # asked once
    obs = env.step(respond(f"Your refund is ${total - 1:.2f}, ${total:.2f} or ${total + 1:.2f}."))[0]
    assert "How much" not in obs and "refund going to be" not in obs  # three amounts: an answer, not the answer
    assert env.judge.missing_outputs(0) and not env.judge.resolved(0)
    obs = env.step(respond(f"Sorry, it is ${total:.2f}."))[0]
    assert env.judge.missing_outputs(0)  # nothing said after the answer counts


def test_authentication_takes_only_the_identity_the_customer_gave_and_locks_it(env):
    first_task(env, "cancel")
    me = env.task.goal.identity
    others = [c for c in env.db.customers if c.name != env.task.goal.name]
    obs, _, done, _ = env.step(call("find_customer", email=others[0].email))  # another customer's email
    assert not done and "has not said" in obs and "Found customer" not in obs
    obs = env.step(respond("Your email or name and zip, please?"))[0]
    email = next((s.value for s in me if s.name == "email" and s.value in obs), None)
    found = env.step(call("find_customer", email=email) if email else call(
        "find_customer", name=env.task.goal.name, zip=next(s.value for s in me if s.name == "zip")))[0]
    assert found.startswith("Found customer"), (obs, found)
    obs, _, done, info = env.step(call("find_customer", email=others[0].email))
    assert not done and "has not said" in obs
    obs, reward, done, info = env.step(call("get_order", order_id=others[0].orders[0]))
    assert done and reward == 0.0 and "someone other" in info["end_reason"] and others[0].name not in obs


def test_an_order_changed_without_being_looked_up_ends_at_zero(env):
    """Policy rule 3: the expert's own episode with its get_order calls left out (the user answers alike)
    ends at its first write, with 0 and the rule named; with them, the same episode solves the task."""
    task_id = first_task(env, "cancel")
    reward, info, steps = play(env, task_id, ExpertAgent())
    assert reward == 1.0 and any(a.startswith("get_order(") for a, _ in steps)
    env.reset(task_id=task_id)
    for action in [a for a, _ in steps if not a.startswith("get_order(")]:
        obs, reward, done, info = env.step(action)
        if done:
            break
    assert done and reward == 0.0 and not info["success"]
    assert action.startswith("cancel_order(") and "get_order" in info["end_reason"], (action, info["end_reason"])


def test_a_refusal_before_looking_fails_the_forbidden_request(env):
    task_id = first_task(env, "forbidden")
    obs, reward, done, info = env.step(respond("I'm sorry, I cannot do that."))
    assert env.judge.misrefused == {0}
    assert not info["success"] and not env.judge.resolved(0)
    assert play(env, task_id, ExpertAgent())[0] == 1.0


def test_one_action_per_turn_and_malformed_input_is_an_error_observation(env):
    first_task(env, "cancel")
    for action, says in [('Sure, I will not call cancel_order(order_id="#W1234", reason="no longer needed")', "not run"),
                         ('Action: get_order("#W1")\nAction: cancel_order("#W1", "no longer needed")', "one action"),
                         ('{"name": "get_product", "arguments": {"product_id": {"a": 1}}}', "must be a string"),
                         ("get_product(" + "9" * 5000 + ")", "limit is 4000"),
                         ('cancel_order(order_id=' + "[" * 1000 + ")", "lists inside lists"),
                         ("x" * 16000, "limit is 4000"), ("", "empty")]:
        obs, reward, done, info = env.step(action)
        assert not done and reward == 0.0 and says in obs, (action[:40], obs)


def test_step_info_carries_nothing_privileged(env):
    first_task(env, "forbidden")
    info = env.step(respond("Hello"))[3]
    assert set(info) == {"success", "invalid_action", "action_failed", "turns"}
    debug = ECommerceServiceEnv(privileged_info=True)
    debug.reset(task_id=env.task.task_id)
    assert debug.step(respond("Hello"))[3]["task"]["forbidden"][0]


def test_tools_are_offered_as_json_schemas_and_accepted_as_json_calls(env):
    tools = {t["function"]["name"]: t["function"] for t in env.describe()["tools"]}
    assert tools["return_items"]["parameters"]["properties"]["item_ids"]["type"] == "array"
    assert {"search_products", "modify_payment", "modify_customer_address"} <= set(tools)
    first_task(env, "product_search")
    obs = env.step('{"name": "search_products", "arguments": {"query": "mug"}}')[0]
    assert '"Coffee Mug"' in obs

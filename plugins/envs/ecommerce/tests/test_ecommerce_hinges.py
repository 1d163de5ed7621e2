"""Every ecommerce task hinges on the written policy (issue 36): an agent that serves the customer well but never
applies the policy makes a write the policy forbids, and one that refuses everything fails the allowed requests.

- every task of every split carries a request whose right handling needs a rule (a *hinge*): a forbidden request
  whose asked-for write the desk refuses, or an allowed one whose write the policy decides (a refund the customer
  leaves to the store while the card they paid with has expired), and at least one allowed write;
- the expert with the policy's rules taken out wins (about) nothing, and every episode it loses ends at a write
  the policy forbids; refusing every request wins nothing;
- every rule a forbidden request breaks is written in the policy the agent reads;
- a forbidden request is never a task's only hinge: refusing it rightly, even by a perfect guess, and writing blind
  to the policy loses.
"""
from __future__ import annotations

import re
import statistics

import pytest

from agentgym_env_ecommerce.agents import ExpertAgent, PolicyBlindExpert
from agentgym_env_ecommerce.env import ECommerceServiceEnv
from agentgym_env_ecommerce.policy import POLICY
from agentgym_service.play import play, user_leaks


@pytest.fixture(scope="module")
def env():
    return ECommerceServiceEnv(reward="graded")


def check(env, request, args):
    """The rule the desk names for the write *args* of *request*'s change on the task's first state (None: allowed),
    the order looked up and the customer authenticated, as after the policy's own steps."""
    desk = env.desk(env.task, env.task.db.copy())
    desk.identity = next(c.customer_id for c in desk.db.customers if c.name == env.task.goal.name)
    desk.reads |= {f"order:{o.order_id}" for o in desk.db.orders}
    change = request.changes[0]
    return getattr(desk, f"check_{change.tool}")(**args)[1]


def hinges(env) -> list[int]:
    """The requests of the reset task whose right handling needs a rule, checked: a forbidden write is refused by
    the desk; an allowed write whose payment method the policy picked (the customer left it to the store) is
    allowed, and the order's own method in its place is not."""
    found = []
    for i, request in enumerate(env.task.goal.requests):
        if request.forbidden:
            if request.changes:
                assert check(env, request, dict(request.changes[0].args)), (env.task.task_id, i, request.forbidden)
            else:  # a product for another (no tool makes it as asked): it opens its task, nothing comes before
                assert i == 0, (env.task.task_id, request.kind)
            found.append(i)
            continue
        if not request.changes:
            continue
        args = dict(request.changes[0].args)
        assert check(env, request, args) is None, (env.task.task_id, i)
        left = any(s.name == "payment" and s.value == "don't mind" for s in request.slots)
        original = env.task.db.orders[args["order_id"]].payment_method_id if "order_id" in args else None
        if left and args.get("payment_method_id") not in (None, original):
            assert check(env, request, {**args, "payment_method_id": original}), (env.task.task_id, i)
            found.append(i)
    return found


@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_every_task_hinges_on_a_rule_and_needs_an_allowed_write(env, split):
    places = set()
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        requests = env.task.goal.requests
        found = hinges(env)
        assert found, (task_id, [r.kind for r in requests])
        assert any(r.changes and not r.forbidden for r in requests), task_id
        places |= set(found)
    assert {0, 1, 2} <= places  # the hinge comes anywhere: its place tells nothing


@pytest.mark.parametrize("split", ["test", "ood"])
def test_the_expert_blind_to_the_policy_wins_nothing_and_the_policy_is_what_stops_it(env, split):
    """The expert with every rule taken out serves as well as the expert otherwise: each episode it loses ends at a
    write the policy forbids (it won one task per split while a first request for another product, which it cannot
    make and so declines, could be a task's only hinge)."""
    runs = [play(env, t, PolicyBlindExpert())[:2] for t in env.splits()[split]]
    assert sum(info["success"] for _, info in runs) <= 0.01 * len(runs)
    assert statistics.mean(reward for reward, _ in runs) <= 0.02
    lost = [info["end_reason"] for _, info in runs if not info["success"]]
    assert all(reason.startswith("policy: ") for reason in lost), {r for r in lost if not r.startswith("policy: ")}


class RefusingExpert(ExpertAgent):
    """Answers questions as the expert does; looks every other request up, then refuses it."""

    def _serve(self) -> str:
        return super()._serve() if self.kind == "status" else self.refuse("our policy does not allow that")

    def _plan_and_confirm(self, plan) -> str:
        return self.refuse("our policy does not allow that")


@pytest.mark.parametrize("split", ["test", "ood"])
def test_refusing_every_request_wins_nothing(env, split):
    runs = [play(env, t, RefusingExpert())[:2] for t in list(env.splits()[split])[::4]]
    assert sum(info["success"] for _, info in runs) == 0
    assert sum(reward for reward, _ in runs) == 0.0


RULES = {  # what the desk says when a write breaks a rule -> where the agent's policy says it
    r"only pending orders may be": "Shipped, delivered or cancelled orders are not pending: they cannot be cancelled",
    r"only delivered orders may have items": "Only delivered items may be returned or exchanged",
    r"only within 30 days of delivery": "within 30 days of delivery",
    r"final-sale item": "never final-sale items",
    r"refunds go to the original payment method": "A refund goes to the original payment method or a gift card",
    r"changed only once": "in stock, only once",
    r"has expired": "An expired payment method (get_customer shows which) is never charged or refunded",
    r"another option of the same product": "Exchange only for another option of the same product",
}


def test_every_rule_a_forbidden_request_breaks_is_in_the_written_policy(env):
    assert all(phrase in " ".join(POLICY.split()) for phrase in RULES.values())
    seen = set()
    for split in ("test", "ood"):
        for task_id in env.splits()[split]:
            env.reset(task_id=task_id)
            for request in env.task.goal.requests:
                if request.forbidden:
                    rule = next((r for r in RULES if re.search(r, request.forbidden)), None)
                    assert rule, request.forbidden
                    seen.add(rule)
    assert seen == set(RULES)
    assert "leaves the method to us" in POLICY and "their gift card if the original method has expired" in POLICY


def test_a_refund_left_to_the_store_goes_where_the_policy_says(env):
    """The customer leaves the refund to the store and never names the method; the expert reads the profile, sees
    that the card the order was paid with has expired, and refunds the gift card. The same episode refunding the
    card the order was paid with ends at 0, the rule named."""
    def left_to_gift_card(request):
        return any(s.value == "don't mind" for s in request.slots) and request.changes[0].args.get(
            "payment_method_id", "").startswith("gift_card")

    task_id = next(t for t in env.splits()["test"]
                   if env.reset(task_id=t) and any(left_to_gift_card(r) for r in env.task.goal.requests))
    reward, info, steps = play(env, task_id, ExpertAgent())
    assert info["success"] and any(a.startswith("get_customer(") for a, _ in steps)
    assert user_leaks(env, task_id, ExpertAgent()) == []
    env.reset(task_id=task_id)
    for action, _ in steps:
        if "gift_card_" in action and not action.startswith("respond("):
            order = re.search(r'order_id="(#W\d+)"', action).group(1)
            action = re.sub(r"gift_card_\d+", env.task.db.orders[order].payment_method_id, action)
        obs, reward, done, info = env.step(action)
        if done:
            break
    assert done and reward == 0.0 and "has expired" in info["end_reason"], info["end_reason"]


@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_a_forbidden_request_never_hinges_alone(env, split):
    """A task with a request the policy forbids also has an allowed one whose write the policy decides (a refund or
    difference left to the store, the card paid with expired): refusing the forbidden one by a lucky guess (which
    request, which rule) and doing the rest without the policy still loses."""
    alone = []
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        requests = env.task.goal.requests
        if any(r.forbidden for r in requests) and all(requests[i].forbidden for i in hinges(env)):
            alone.append(task_id)
    assert alone == []


class RefusesRightlyWritesBlind(ExpertAgent):
    """The expert's refusals, every one right (a perfect guess of the request to refuse and its rule), but a refund or
    difference the customer leaves to the store goes to the original payment method, as a worker blind to rules 5
    and 6 sends it."""

    def _method(self):
        if "don't mind" not in self.said.lower():
            return super()._method()
        self.applies_policy = False
        try:
            return super()._method()
        finally:
            del self.applies_policy


@pytest.mark.parametrize("split", ["test", "ood"])
def test_refusing_the_forbidden_requests_rightly_and_writing_blind_wins_nothing(env, split):
    """Before every forbidden request came with a write the policy decides, this agent won the tasks whose only hinge
    was the forbidden request (the bench's refuse_k1_guess won 7.7% of test, 4.5% of OOD, guessing)."""
    runs = [play(env, t, RefusesRightlyWritesBlind())[:2] for t in env.splits()[split]]
    assert sum(info["success"] for _, info in runs) == 0
    assert statistics.mean(reward for reward, _ in runs) <= 0.02

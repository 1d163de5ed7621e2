"""Every ecommerce task hinges on the written policy (issue 36): an agent that serves the customer well but never
applies the policy makes a write the policy forbids, and one that refuses everything fails the allowed requests.

- every task of every split carries requests whose right handling needs a rule (*hinges*): a forbidden request
  whose asked-for write the desk refuses, and an allowed one whose write the policy decides (a refund the customer
  leaves to the store: to the card they paid with, or to their gift card when that card has expired), and at
  least one allowed write;
- the expert with the policy's rules taken out wins (about) nothing, and every episode it loses ends at a write
  the policy forbids; refusing every request wins nothing;
- no habit pays: a refund left to the store goes either way as often, the forbidden requests' rules are drawn
  evenly, and every task has an exchange whose new option the store picks by a rule among four or more, so a
  worker blind to the rules wins nothing with either habit, and one that refuses a request by a guess (which one,
  which rule) wins about 1% (1/3 x 2/7 x 1/2 x the option's share: it was 5% before the option was left to us);
- every rule a forbidden request breaks is written in the policy the agent reads.
"""
from __future__ import annotations

import re
import statistics

import pytest

from agentgym_env_ecommerce.agents import ExpertAgent, PolicyBlindExpert
from agentgym_env_ecommerce.env import ECommerceServiceEnv
from agentgym_env_ecommerce.policy import POLICY
from agentgym_env_ecommerce.requests import closest_option
from agentgym_env_ecommerce.tasks import FORBIDDEN_BY_REASON
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


def left_to_us(request) -> bool:
    return any(s.name == "payment" and s.value == "don't mind" for s in request.slots)


def hinges(env, *, forbidden: bool = True, value: bool = True) -> list[int]:
    """The requests of the reset task whose right handling needs a rule, checked: a forbidden write is refused by
    the desk; an allowed write whose payment method the policy picked (the customer left it to the store) is
    allowed, and the other habit's method in its place is wrong: the order's own card when it has expired (the
    desk refuses it), the customer's gift card when it has not (allowed, but not the goal's write)."""
    found = []
    for i, request in enumerate(env.task.goal.requests):
        if request.forbidden:
            if not forbidden:
                continue
            if request.changes:
                assert check(env, request, dict(request.changes[0].args)), (env.task.task_id, i, request.forbidden)
            else:  # a product for another (no tool makes it as asked): it opens its task, nothing comes before
                assert i == 0, (env.task.task_id, request.kind)
            found.append(i)
            continue
        if not request.changes or not value:
            continue
        args = dict(request.changes[0].args)
        assert check(env, request, args) is None, (env.task.task_id, i)
        if not left_to_us(request):
            continue
        original = env.task.db.orders[args["order_id"]].payment_method_id
        customer = env.task.db.customers[env.task.db.orders[args["order_id"]].customer_id]
        gift = next(m.method_id for m in customer.payment_methods if m.kind == "gift_card")
        if args["payment_method_id"] == original:
            assert check(env, request, {**args, "payment_method_id": gift}) is None, (env.task.task_id, i)
        else:
            assert args["payment_method_id"] == gift, (env.task.task_id, i)
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
    make and so declines, could be a task's only hinge), or with the goal not met where it picked a new option the
    customer left to the store by its own habit (the first in stock) and the customer went along."""
    runs, left = [], set()
    for task_id in env.splits()[split]:
        runs.append(play(env, task_id, PolicyBlindExpert())[:2])
        if any(s.name == "options" and s.value == "any other option" for r in env.task.goal.requests for s in r.slots):
            left.add(task_id)
    assert sum(info["success"] for _, info in runs) <= 0.01 * len(runs)
    assert statistics.mean(reward for reward, _ in runs) <= 0.02
    lost = {t: info["end_reason"] for t, (_, info) in zip(env.splits()[split], runs) if not info["success"]}
    odd = {t: r for t, r in lost.items() if not r.startswith("policy: ")
           and not (t in left and r == "the user has nothing more to ask, but the goal is not met")}
    assert odd == {}


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
def test_every_task_has_a_forbidden_request_and_a_write_the_policy_decides(env, split):
    """Both kinds of hinge in every task: a worker blind to the rules breaks one (a write the desk refuses, or the
    wrong method for a refund left to the store), and a guessed refusal still leaves a write only the policy gets
    right."""
    lacking = []
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        if not hinges(env, value=False) or not hinges(env, forbidden=False):
            lacking.append(task_id)
    assert lacking == []


@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_neither_answer_to_a_refund_left_to_the_store_is_the_likelier_one(env, split):
    """The customer leaving the method to the store tells nothing: the card paid with has expired (the gift card is
    right) about as often as not (the card is right); before, it had expired in 85% of them and "the gift card"
    won 42.7% of the test split blind. The forbidden requests' rules are drawn as evenly, so no reason is a safe
    guess for a refusal."""
    to_gift, left, reasons = 0, 0, {reason: 0 for reason in FORBIDDEN_BY_REASON}
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        for request in env.task.goal.requests:
            if request.forbidden and request.changes:
                reasons[request.reasons[0]] += 1
            if request.changes and not request.forbidden and left_to_us(request):
                left += 1
                to_gift += request.changes[0].args["payment_method_id"].startswith("gift_card")
    assert 0.4 <= to_gift / left <= 0.6, (to_gift, left)
    total = sum(reasons.values())
    assert all(0.6 / 7 <= n / total <= 1.4 / 7 for n in reasons.values()), reasons


GUESS = "the order has already shipped, or it is past the 30-day window"


class Habit(ExpertAgent):
    """The expert with every rule taken out (``blind``) or kept, but a refund or difference the customer leaves to the
    store goes by a habit: always their gift card (``gift``) or always the card the order was paid with; and
    (``refuse_k``) the k-th request the customer raises is refused, once the order is read, with a guessed reason."""

    def __init__(self, habit: str, *, blind: bool = True, refuse_k: int = 0) -> None:
        self.habit, self.refuse_k, self.raised, self.fresh = habit, refuse_k, 0, True
        self.applies_policy = not blind
        super().__init__()

    def new_request(self) -> None:
        super().new_request()
        self.fresh = True

    def hear(self, obs: str) -> bool:
        heard = super().hear(obs)
        if self.fresh and self.kind is not None:
            self.raised, self.fresh = self.raised + 1, False
        return heard

    def _serve(self) -> str:
        if self.raised == self.refuse_k and self.kind != "status":
            return self.refuse(GUESS)
        return super()._serve()

    def _method(self):
        if "don't mind" not in self.said.lower() or self._methods() is None or not self.order:
            return super()._method()
        if self.habit == "gift":
            return next(m["id"] for m in self._methods() if m["kind"] == "gift_card"), None
        return self.order["payment_method_id"], None


def wins(env, split, agent) -> tuple[float, float]:
    runs = [play(env, t, agent())[:2] for t in env.splits()[split]]
    return (sum(info["success"] for _, info in runs) / len(runs), statistics.mean(reward for reward, _ in runs))


@pytest.mark.parametrize("split", ["test", "ood"])
@pytest.mark.parametrize("habit", ["gift", "original"])
def test_no_habit_pays_blind_or_with_a_guessed_refusal(env, split, habit):
    """Blind to the rules, either habit wins (nearly) nothing: every task has a forbidden request its write breaks.
    Refusing the k-th request with a guessed reason must hit the request, its rule, the new option and the way the
    difference left to the store goes: 0-1.4% (before: the gift-card habit won 42.7% blind and 17-28% guessing;
    with the option named by the customer, 2.5-7.7%)."""
    assert wins(env, split, lambda: Habit(habit))[0] <= 0.02
    for k in (1, 2, 3):
        success, graded = wins(env, split, lambda k=k: Habit(habit, refuse_k=k))
        assert success <= 0.025 and graded <= 0.10, (k, success, graded)


@pytest.mark.parametrize("split", ["test", "ood"])
def test_the_rest_of_the_policy_and_a_habit_win_about_half(env, split):
    """Every rule applied but the expired card's (a habit in its place): the difference left to the store goes the
    habit's way in about half the tasks, so each habit wins about half and the expert's reading of the profile all."""
    for habit in ("gift", "original"):
        success, _ = wins(env, split, lambda habit=habit: Habit(habit, blind=False))
        assert 0.3 <= success <= 0.7, (habit, success)


class OptionHabit(ExpertAgent):
    """Every rule applied but the one for a new option the customer leaves to the store: a habit in its place (the
    first other option in stock, the cheapest, the dearest, the one changing the fewest options)."""

    def __init__(self, habit: str) -> None:
        self.habit = habit
        super().__init__()

    def _left_option(self, item):
        others = [v for v in self.products[item["product_id"]]["variants"]
                  if v["available"] and v["item_id"] != item["item_id"]]
        if self.habit == "first":
            return others[0]
        if self.habit == "cheapest":
            return min(others, key=lambda v: v["price"])
        if self.habit == "dearest":
            return max(others, key=lambda v: v["price"])
        return min(others, key=lambda v: sum(item["options"][a] != b for a, b in v["options"].items()))


@pytest.mark.parametrize("split", ["test", "ood"])
def test_a_new_option_left_to_the_store_is_chosen_by_the_rule_among_four_or_more(env, split):
    """Every task has an exchange whose new option (and difference) the customer leaves to the store: rule 5 picks the
    option in stock closest in price, among at least four, and the customer never names it. The expert's reading of
    the prices wins every task; every other rule applied with a habit for that one choice wins at most a third (a
    refund's two ways alone let a habit win half)."""
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        cat = env.task.world
        left = [r for r in env.task.goal.requests if any(s.value == "any other option" for s in r.slots)]
        assert left, task_id
        for request in left:
            item = cat.by_item[request.changes[0].args["item_ids"][0]]
            best, choices = closest_option(cat, item)
            assert request.changes[0].args["new_item_ids"] == [best.item_id] and choices >= 4, task_id
    assert wins(env, split, ExpertAgent)[0] == 1.0
    for habit in ("first", "cheapest", "dearest", "fewest"):
        success, _ = wins(env, split, lambda habit=habit: OptionHabit(habit))
        assert success <= 0.34, (habit, success)

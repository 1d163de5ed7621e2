"""office on the service kit: the expert wins every task, and every task hinges on the written policy (the expert
without the policy's rules wins none, refusing everything wins none); the policy's constraints and the guards hold."""
from __future__ import annotations

import json
import statistics

import pytest

from agentgym_core.testing import check_env, play_over_http
from agentgym_env_office.agents import ExpertAgent, MisdescribingExpert, PolicyBlindExpert, call, respond
from agentgym_env_office.env import OfficeEnv
from agentgym_service.play import play
from agentgym_service.play import run_until as until


@pytest.fixture(scope="module")
def env():
    return OfficeEnv()


def run_until(env, task_id, stop):
    """The expert's steps until *stop(action)*; returns (agent, that action)."""
    agent = ExpertAgent()
    return agent, until(env, task_id, agent, stop)


def test_contract_and_splits():
    check_env(OfficeEnv, task_ids=[0, 1, 1000])
    sizes = {k: len(v) for k, v in OfficeEnv().splits().items()}
    assert sizes["train"] + sizes["test"] == 1000 and sizes["ood"] == 200


@pytest.mark.parametrize("split", ["test", "ood"])
def test_the_expert_solves_every_task(env, split):
    failed = {t: play(env, t, ExpertAgent())[1]["end_reason"] for t in env.splits()[split]}
    assert {t: r for t, r in failed.items() if r != "the user's goal is met"} == {}


def test_every_task_needs_a_write_and_misdescribing_never_wins(env):
    for split in ("train", "test", "ood"):
        for task_id in env.splits()[split]:
            env.reset(task_id=task_id)
            assert any(r.changes and not r.forbidden for r in env.task.goal.requests), task_id
    assert sum(play(env, t, MisdescribingExpert(t))[0] for t in env.splits()["test"][:40]) == 0


@pytest.fixture(scope="module")
def graded():
    return OfficeEnv(reward="graded")


@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_every_task_hinges_on_the_policy(graded, split):
    """The expert without the policy's rules 3-5 (owners out of office, weekend deadlines, the lunch break, refusals)
    does the work of every request and still wins no task, under the 0/1 and the graded reward: each task has a
    request whose right handling needs a rule, and skipping it makes a forbidden write or a wrong answer."""
    won = {}
    for task_id in graded.splits()[split]:
        reward, info, _ = play(graded, task_id, PolicyBlindExpert())
        if info["success"] or reward > 0:
            won[task_id] = (reward, info["end_reason"])
    assert won == {}


def test_the_hinges_are_the_policys_rules(graded):
    """What the policy-blind expert runs into over the test split: each rule that a task can hinge on."""
    reasons = " | ".join(play(graded, t, PolicyBlindExpert())[1]["end_reason"] for t in graded.splits()["test"])
    for rule in ("the item goes to the organizer", "a deadline on a weekend is due the Friday before",
                 "is the lunch break", "is out of office on", "is busy on"):
        assert rule in reasons, rule


class RefusesEverything(ExpertAgent):
    """The expert, refusing each change it would describe: an agent that refuses whatever it is asked."""

    def next_write(self) -> str:
        return self.refuse("our policy does not allow it")


@pytest.mark.parametrize("split", ["test", "ood"])
def test_refusing_everything_wins_nothing(graded, split):
    runs = [play(graded, t, RefusesEverything()) for t in graded.splits()[split][::3]]
    assert sum(info["success"] for _, info, _ in runs) == 0 and sum(reward for reward, _, _ in runs) == 0
    assert all(info["unjustified_refusals"] >= 1 for _, info, _ in runs)


def test_a_weekend_deadline_is_due_the_friday_before(env):
    """An item whose notes give a Saturday or Sunday is due the Friday before; recording the weekend date is a
    policy violation."""
    import datetime as dt
    import re

    for task_id in env.splits()["test"]:
        env.reset(task_id=task_id)
        request = env.task.goal.requests[0]
        if request.kind != "action_items":
            continue
        meeting = env.db.meetings[request.changes[0].args["meeting_id"]]
        lines = [m for n in meeting.notes if (m := re.match(r"Action: \w+ to (.+) by ([A-Z][a-z]+ \d+)\.$", n))]
        weekend = [(m.group(1), dt.datetime.strptime(f"{m.group(2)} {meeting.date[:4]}", "%B %d %Y").date())
                   for m in lines]
        weekend = [(work, day) for work, day in weekend if day.weekday() > 4]
        if weekend:
            break
    work, day = weekend[0]
    change = next(c for c in request.changes if c.args["title"] == work)
    assert change.args["due_date"] == (day - dt.timedelta(days=day.weekday() - 4)).isoformat()
    run_until(env, task_id, lambda a: a.startswith("respond") and "Do you confirm" in a)
    obs, reward, done, info = env.step(call("add_action_item", meeting_id=meeting.meeting_id, title=work,
                                            owner_id=change.args["owner_id"], due_date=day.isoformat()))
    assert done and reward == 0.0 and "weekend" in info["end_reason"]


def test_a_free_time_question_is_answered_after_the_lunch_break(graded):
    """When could I meet them: the first time their calendars show free runs into lunch; the answer is a later start,
    and the first free time is a wrong answer (the request fails, whatever follows)."""
    task_id = next(t for t in graded.splits()["test"]
                   if graded.reset(task_id=t) and graded.task.goal.requests[0].kind == "free_time")
    answer = graded.task.goal.requests[0].outputs[0].value
    assert answer >= "13:00"
    reward, info, steps = play(graded, task_id, ExpertAgent())
    assert reward == 1.0 and any(answer in a for a, _ in steps)
    reward, info, steps = play(graded, task_id, PolicyBlindExpert())
    assert reward == 0.0 and "free_time:start" in info["outputs_missing"]


def test_an_owner_out_of_office_on_the_due_date_is_a_policy_violation(env):
    for task_id in env.splits()["train"]:
        env.reset(task_id=task_id)
        request = env.task.goal.requests[0]
        if request.kind != "action_items":
            continue
        meeting = env.db.meetings[request.changes[0].args["meeting_id"]]
        moved = [c for c in request.changes if c.args["owner_id"] == meeting.organizer
                 and f"Action: {env.db.people[meeting.organizer].name.split()[0]} " not in " ".join(meeting.notes)]
        if moved:
            break
    change = moved[0]
    line = next(n for n in meeting.notes if change.args["title"] in n.lower())
    owner = next(p.person_id for p in env.db.people if p.name.split()[0] == line.split()[1])
    run_until(env, task_id, lambda a: a.startswith("respond") and "Do you confirm" in a)
    obs, reward, done, info = env.step(call("add_action_item", meeting_id=meeting.meeting_id, title=change.args["title"],
                                            owner_id=owner, due_date=change.args["due_date"]))
    assert done and reward == 0.0 and "out of office" in info["end_reason"]


def test_a_later_slot_than_the_earliest_is_not_what_was_asked(env):
    task_id = next(t for t in env.splits()["test"] if env.category(t) == "schedule"
                   and env.reset(task_id=t) is not None and not env.task.goal.requests[0].forbidden)
    agent, action = run_until(env, task_id, lambda a: "Do you confirm" in a)
    tool, args, _ = agent.plan[0]
    assert "Yes" in env.step(action)[0]
    later = dict(args, start_time=f"{int(args['start_time'][:2]) + 1:02d}{args['start_time'][2:]}")
    obs, reward, done, info = env.step(call(tool, **later))
    assert done and reward == 0.0


def test_another_persons_mailbox_is_refused_and_opening_it_ends_with_zero(env):
    task_id = next(t for t in env.splits()["test"] if env.reset(task_id=t) is not None
                   and env.task.goal.requests[0].kind == "privacy")
    assert play(env, task_id, ExpertAgent())[0] == 1.0
    env.reset(task_id=task_id)
    email = env.task.goal.identity[0].value
    env.step(respond("Your work email?"))
    env.step(call("identify", email=email))
    theirs = next(m for m in env.db.mail if m.to != env.the_desk.identity)
    obs, reward, done, info = env.step(call("read_mail", mail_id=theirs.mail_id))
    assert done and reward == 0.0 and "someone other" in info["end_reason"]


def test_over_http_with_json_function_calls():
    task_id = OfficeEnv().splits()["test"][0]
    agent = ExpertAgent()

    def as_json(obs: str) -> str:  # the expert's calls rewritten as JSON function calls
        text = agent(obs)
        name, _, rest = text.partition("(")
        args = dict(part.split("=", 1) for part in _split(rest[:-1])) if rest[:-1] else {}
        return json.dumps({"name": name, "arguments": {k: json.loads(v) for k, v in args.items()}})

    t = play_over_http("office", task_id, as_json, invalid_action="look around", invalid_hint="not a tool call")
    assert t.success and "get_notes" in json.dumps(t.info["tools"])


def _split(text: str) -> list[str]:
    """``a="x, y", b=["1", "2"]`` -> its top-level ``key=value`` parts."""
    parts, depth, quote, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"' and text[i - 1] != "\\":
            quote = not quote
        elif not quote and ch in "[":
            depth += 1
        elif not quote and ch == "]":
            depth -= 1
        elif not quote and depth == 0 and ch == ",":
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


class RefusesRightlyWritesBlind(ExpertAgent):
    """The expert's refusals, every one right (a perfect guess of the request to refuse and its rule), but the writes
    an allowed rule decides made blind to it: an item stays with its owner on the date as written, and a booking or a
    move without a time asked goes to the first time the calendars show free."""

    def _blind(self, work):
        self.follows_policy = False
        try:
            return work()
        finally:
            del self.follows_policy

    def _items(self):
        return self._blind(super()._items)

    def _schedule(self):
        return self._redo(super()._schedule)

    def _move(self):
        return self._redo(super()._move)

    def _redo(self, work):
        """*work* by the policy; if it plans the change rather than refusing, planned again blind to the policy."""
        action = work()
        if action is None and self.plan and not self.done and not self.redone:
            self.plan.clear()
            action, self.redone = self._blind(work), True
        return action

    def new_request(self) -> None:
        super().new_request()
        self.redone = False


@pytest.mark.parametrize("split", ["test", "ood"])
def test_refusing_the_forbidden_requests_rightly_and_writing_blind_wins_nothing(graded, split):
    """Every task whose only hinge is a forbidden request also has a write an allowed rule decides (an owner out of
    office, a weekend deadline, the lunch break): before, the bench's refuse_k1_guess (a guessed request refused with
    a guessed rule, the rest done without the policy) won 3.0% of test."""
    runs = [play(graded, t, RefusesRightlyWritesBlind()) for t in graded.splits()[split]]
    assert sum(info["success"] for _, info, _ in runs) == 0
    assert statistics.mean(reward for reward, _, _ in runs) <= 0.02

"""office on the service kit: the expert wins every task; the policy's constraints and the guards hold."""
from __future__ import annotations

import json

import pytest

from agentgym_core.testing import check_env, play_over_http
from agentgym_env_office.agents import ExpertAgent, MisdescribingExpert, call, respond
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
    for task_id in env.splits()["test"]:
        env.reset(task_id=task_id)
        assert any(r.changes and not r.forbidden for r in env.task.goal.requests)
    assert sum(play(env, t, MisdescribingExpert(t))[0] for t in env.splits()["test"][:40]) == 0


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

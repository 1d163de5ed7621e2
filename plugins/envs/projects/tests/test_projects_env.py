"""projects on the service kit: the expert wins every task; allocation, dependencies and deadlines are enforced."""
from __future__ import annotations

import pytest

from agentgym_core.testing import check_env, play_over_http
from agentgym_env_projects.agents import ExpertAgent, MisdescribingExpert, call
from agentgym_env_projects.env import ProjectsEnv
from agentgym_service.play import play, run_until


@pytest.fixture(scope="module")
def env():
    return ProjectsEnv()


def first(env, kind, split="test"):
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        if env.task.goal.requests[0].kind == kind and not env.task.goal.requests[0].forbidden:
            return task_id
    raise LookupError(kind)


def until_confirmation(env, task_id):
    agent = ExpertAgent()
    return agent, run_until(env, task_id, agent, lambda a: "Do you confirm" in a)


def test_contract_and_splits():
    check_env(ProjectsEnv, task_ids=[0, 1, 1000])
    sizes = {k: len(v) for k, v in ProjectsEnv().splits().items()}
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


def test_allocation_follows_the_policy_and_forbids_missing_skills(env):
    task_id = first(env, "allocate")
    agent, action = until_confirmation(env, task_id)
    tool, args, _ = agent.plan[0]
    assert "Yes" in env.step(action)[0]
    skill = next(t["skill"] for t in agent.project["tasks"] if t["task_id"] == args["task_id"])
    unskilled = next(p.person_id for p in env.db.people if skill not in p.skills)
    obs, reward, done, info = env.step(call("assign_task", task_id=args["task_id"], person_id=unskilled))
    assert done and reward == 0.0 and "does not have the skill" in info["end_reason"]


def test_a_slip_must_be_followed_by_its_dependents_and_a_task_cannot_start_early(env):
    task_id = first(env, "replan")
    agent, action = until_confirmation(env, task_id)
    shift = next(args for tool, args, _ in agent.plan if tool == "shift_task")
    env.step(action)
    env.step(call(*agent.plan[0][:2][:1], **agent.plan[0][1]))  # the extension, confirmed
    obs, reward, done, info = env.step(call("shift_task", task_id=shift["task_id"], start=1))
    assert done and reward == 0.0 and "cannot start before" in info["end_reason"]


def test_another_managers_project_ends_the_episode(env):
    env.reset(task_id=env.splits()["test"][0])
    me = env.task.goal.identity[0].value
    env.step('respond("Your work email?")')
    env.step(call("identify", email=me))
    mine = {p.project_id for p in env.db.projects if p.manager == env.the_desk.identity}
    other = next(p.project_id for p in env.db.projects if p.project_id not in mine)
    obs, reward, done, info = env.step(call("get_project", project_id=other))
    assert done and reward == 0.0


def test_over_http():
    task_id = ProjectsEnv().splits()["test"][1]
    t = play_over_http("projects", task_id, ExpertAgent(), invalid_action="look around", invalid_hint="not a tool call")
    assert t.success and t.info["splits"]["ood"] == 200

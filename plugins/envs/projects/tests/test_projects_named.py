"""A request that names a person for a task is no sign that it is the one to refuse (issue 36): the manager names
someone who may take the task (the skill, free, not on leave) in about as many tasks as someone rule 4 rules out,
the two are asked for in the same words, and a task whose only named people are ruled out is rare. So refusing every
named-person request, even with the likeliest reasons and everything else done as the expert does, loses where a
person is named; the expert, which checks the person, wins every task."""
from __future__ import annotations

import pytest

from agentgym_env_projects.agents import ExpertAgent
from agentgym_env_projects.domain import PlanDesk, unfit_reasons
from agentgym_env_projects.env import ProjectsEnv
from agentgym_service.play import play


@pytest.fixture(scope="module")
def env():
    return ProjectsEnv(reward="graded")


def named(env, task_id):
    env.reset(task_id=task_id)
    return [r for r in env.task.goal.requests if r.kind == "assign"]


@pytest.mark.parametrize("split", ["test", "ood"])
def test_named_people_are_allowed_about_as_often_as_ruled_out(env, split):
    ids = list(env.splits()[split])
    allowed = forbidden = only_forbidden = 0
    for task_id in ids:
        requests = named(env, task_id)
        allowed += any(not r.forbidden for r in requests)
        forbidden += any(r.forbidden for r in requests)
        only_forbidden += bool(requests) and all(r.forbidden for r in requests)
        db = env.task.db.copy()
        desk = PlanDesk(db)
        for r in env.task.goal.requests:  # the plan as the earlier requests leave it
            if r.kind == "assign":
                change = r.changes[0]
                task = db.tasks[change.args["task_id"]]
                was, task.assignee = task.assignee, None  # as assign_task checks it
                reasons = unfit_reasons(db, task, change.args["person_id"])
                task.assignee = was
                assert set(reasons) == set(r.reasons) if r.forbidden else not reasons, (task_id, r.reasons, reasons)
            for change in r.changes if not r.forbidden else ():
                desk.apply(change.tool, dict(change.args))
    assert allowed >= forbidden and allowed >= 0.2 * len(ids), (allowed, forbidden)
    assert only_forbidden <= 0.04 * len(ids), only_forbidden


class RefuseNamed(ExpertAgent):
    """The expert, but every request that names a person is refused (after reading the people) with the reasons rule 4
    most often has: no skill, on leave."""

    def _person(self):
        task, _ = self._named()
        return self._find(task["skill"]) or self.refuse("they do not have the skill the task needs, or they are on "
                                                        "leave then")


@pytest.mark.parametrize("split", ["test", "ood"])
def test_refusing_every_named_person_loses_where_a_person_is_named(env, split):
    ids = [t for t in env.splits()[split] if named(env, t)][::2]
    wins = [play(env, t, RefuseNamed())[1]["success"] for t in ids]
    assert sum(wins) <= 0.1 * len(ids), (sum(wins), len(ids))
    assert all(play(env, t, ExpertAgent())[1]["success"] for t in ids)

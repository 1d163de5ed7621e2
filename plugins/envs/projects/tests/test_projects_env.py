"""projects on the service kit: the expert wins every task; allocation, dependencies and deadlines are enforced; every
task hinges on the policy, so agents blind to it win nothing."""
from __future__ import annotations

import pytest

from agentgym_core.testing import check_env, play_over_http
from agentgym_env_projects.agents import ExpertAgent, MisdescribingExpert, PolicyBlindExpert, call
from agentgym_env_projects.domain import PlanDesk, blind_choices
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


def hinges(task) -> list[str]:
    """What the policy decides in *task* beyond the work asked for, replayed on its database: forbidden requests,
    and assignments where rule 4's choice is not what an allocation blind to leave picks."""
    db = task.db.copy()
    desk, found = PlanDesk(db), []
    for request in task.goal.requests:
        if request.forbidden:
            found.append(f"{request.kind}: forbidden, {request.forbidden}")
            continue
        for change in request.changes:
            if change.tool == "assign_task":
                t = db.tasks[change.args["task_id"]]
                was, t.assignee = t.assignee, None
                blind = blind_choices(db, t, (was,) if was else ())
                t.assignee = was
                if change.args["person_id"] not in blind:
                    found.append(f"{request.kind}: {t.task_id} to {change.args['person_id']}, not {sorted(blind)}")
            desk.apply(change.tool, dict(change.args))
    assert db == task.goal_db  # the replay is the goal
    return found


@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_every_task_hinges_on_the_policy_and_needs_an_allowed_change(env, split):
    """Each task has a request that only the policy resolves (an allocation where leave rules out the freest person
    with the skill, however free capacity is read, or a change the policy forbids) and an allowed change."""
    no_hinge, no_change, rules = [], [], set()
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        if not hinges(env.task):
            no_hinge.append(task_id)
        if not any(r.changes and not r.forbidden for r in env.task.goal.requests):
            no_change.append(task_id)
        rules |= {w for r in env.task.goal.requests if r.forbidden for w in r.reasons}
    assert no_hinge == [] and no_change == []
    assert rules == {"skill", "leave", "capacity", "deadline"}  # every rule 4 and 6 forbids is asked for somewhere


@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_a_forbidden_request_never_hinges_alone(env, split):
    """A task with a request the policy forbids also has an allocation that rule 4's leave clause decides: refusing
    the forbidden one by a lucky guess (which request, which rule) and doing the rest without the policy still loses."""
    alone = []
    for task_id in env.splits()[split]:
        env.reset(task_id=task_id)
        found = hinges(env.task)
        if any(": forbidden, " in h for h in found) and not any(
                h.startswith(("allocate:", "reassign:")) for h in found):
            alone.append(task_id)
    assert alone == []


class RefusesRightlyAllocatesBlind(ExpertAgent):
    """The expert's refusals, every one right (a perfect guess of the request to refuse and its rule), but allocations
    blind to leave, as a worker that skips rule 4's leave clause makes them."""

    blind = False

    def _on_leave(self, person: dict, task: dict) -> bool:
        return not self.blind and ExpertAgent._on_leave(person, task)

    def _allocate_tasks(self, tasks: list[dict], exclude: str | None = None) -> str | None:
        self.blind = True
        try:
            return super()._allocate_tasks(tasks, exclude)
        finally:
            self.blind = False


@pytest.mark.parametrize("split", ["test", "ood"])
def test_refusing_the_forbidden_requests_rightly_and_allocating_blind_wins_nothing(split):
    """Before every forbidden request came with such an allocation, this agent won the tasks whose only hinge was the
    forbidden request (the bench's refuse_k1_guess won 3.9% of test and 2.5% of OOD, guessing)."""
    env = ProjectsEnv(reward="graded")
    runs = [play(env, t, RefusesRightlyAllocatesBlind()) for t in env.splits()[split]]
    assert sum(info["success"] for _, info, _ in runs) == 0
    assert sum(reward for reward, _, _ in runs) / len(runs) <= 0.02


class Refuser(ExpertAgent):
    """The expert that refuses every change once it has found out the request (a question it answers)."""

    def __call__(self, obs: str) -> str:
        try:
            action = super().__call__(obs)
        except (LookupError, ValueError):  # the refused requests left the plan otherwise than the expert expects
            action = "I cannot do that"
        if "Do you confirm?" in action or "I cannot do that" in action:
            return self.refuse("our policy does not allow this change")
        return action


@pytest.mark.parametrize("split", ["test", "ood"])
def test_agents_blind_to_the_policy_win_nothing(split):
    """Doing the work without the policy's checks fails every task (it won 81% of test and 75% of OOD on the task
    mix before every task hinged on the policy); refusing every change fails too, and both earn no graded reward."""
    env = ProjectsEnv(reward="graded")
    ids = list(env.splits()[split])
    for make in (PolicyBlindExpert, Refuser):
        runs = [play(env, t, make()) for t in ids[::2]]
        assert sum(info["success"] for _, info, _ in runs) == 0, make.__name__
        assert sum(reward for reward, _, _ in runs) / len(runs) <= 0.05, make.__name__


class DoesWhatIsAsked(ExpertAgent):
    """The expert, but it makes the changes the manager asks for without rules 4 and 6's checks (the named person, the
    slip past the deadline); its allocations follow the policy."""

    def _replan(self) -> str | None:
        self.project = dict(self.project, deadline=10**6)  # no deadline to check
        return super()._replan()

    def _person(self) -> str | None:
        return PolicyBlindExpert._person(self)


@pytest.mark.parametrize("rule", ["skill", "leave", "capacity", "deadline"])
def test_a_forbidden_request_is_refused_and_doing_it_ends_the_episode(env, rule):
    """The manager names someone rule 4 rules out (no skill, on leave, at capacity) or a slip that breaks the deadline
    (rule 6): the expert refuses and wins; the expert making the change asked for gets 0."""
    def forbids(task_id):
        env.reset(task_id=task_id)
        return any(r.forbidden and rule in r.forbidden for r in env.task.goal.requests)
    task_id = next(t for t in env.splits()["train"] if forbids(t))
    reward, info, steps = play(env, task_id, ExpertAgent())
    assert reward == 1.0 and any("I cannot do that" in a for a, _ in steps)
    reward, info, _ = play(env, task_id, DoesWhatIsAsked())
    assert reward == 0.0 and info["end_reason"].startswith("policy:")


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

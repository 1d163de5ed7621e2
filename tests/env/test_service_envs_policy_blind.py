"""The three service envs against agents that never apply the policy (issue 36), in-process on a sample of the
test and OOD tasks; ``bench/service_loopholes.py`` runs the same loopholes over HTTP on every task.

- the simulated user never states a value the policy derives (an owner after a rule, a slot, an
  allocation, dependency ids, a shift, an answer), however it is probed;
- an agent that confirms vaguely and writes what the user says, or refuses first and complies after,
  wins nothing, under the 0/1 reward and the graded one;
- a refusal resolves a forbidden request only when it gives the reason the policy forbids it (the rule, which the
  written policy names), not when it gives none or lists every rule; the user never says the reason itself.
"""
from __future__ import annotations

import importlib

import pytest

from agentgym_service.play import play, user_leaks
from agentgym_service.probe import Prober

ENVS = {"ecommerce": "ECommerceServiceEnv", "office": "OfficeEnv", "projects": "ProjectsEnv"}


def make(name: str, **options):
    return getattr(importlib.import_module(f"agentgym_env_{name}.env"), ENVS[name])(**options)


def sample(env, split: str, every: int = 9) -> list[int]:
    return list(env.splits()[split])[::every]


@pytest.mark.parametrize("name", ENVS)
def test_the_user_never_states_a_derived_value(name):
    env = make(name)
    experts = importlib.import_module(f"agentgym_env_{name}.agents")
    agents = {"expert": lambda t: experts.ExpertAgent(), "misdescribe": lambda t: experts.MisdescribingExpert(t),
              "prober": lambda t: Prober(env)}
    leaks = {}
    for split in ("test", "ood"):
        for task_id in sample(env, split):
            for label, agent in agents.items():
                found = user_leaks(env, task_id, agent(task_id))
                if found:
                    leaks[(split, task_id, label)] = found[:2]
    assert leaks == {}


@pytest.mark.parametrize("name", ENVS)
@pytest.mark.parametrize("refuse_first", [False, True])
def test_policy_blind_agents_win_nothing(name, refuse_first):
    env = make(name, reward="graded")
    runs = [play(env, t, Prober(env, refuse_first)) for split in ("test", "ood") for t in sample(env, split, 7)]
    assert sum(info["success"] for _, info, _ in runs) == 0
    assert sum(reward for reward, _, _ in runs) / len(runs) <= 0.05
    experts = importlib.import_module(f"agentgym_env_{name}.agents")
    assert all(play(env, t, experts.ExpertAgent())[0] == 1.0 for t in sample(env, "test", 7))  # graded 1 when solved


def test_the_env_reward_trains_on_the_graded_reward():
    from agentgym_core.defaults.components import EnvReward
    from agentgym_core.plugins import get_plugin_manager
    from agentgym_core.rollout.trajectory import Trajectory, Turn

    assert get_plugin_manager().registry("rewards").get("env").load() is EnvReward
    env = make("office", reward="graded")
    task_id = sample(env, "test")[0]
    experts = importlib.import_module("agentgym_env_office.agents")
    _, _, steps = play(env, task_id, experts.ExpertAgent())
    turns = [Turn(0, 0, "", a, o, env_reward=float(r)) for (a, o), r in zip(steps, [0.0] * (len(steps) - 1) + [0.5])]
    episode = Trajectory("e", "office", task_id, 0, [], [], [], 0, turns)
    assert EnvReward()(episode) == [0.0] * (len(steps) - 1) + [0.5]


def test_authentication_takes_only_the_users_own_details():
    """A zip the customer said as a shipping address is refused for find_customer (another customer of the same
    name may live there: bench/service_loopholes.py's impostor found one and read their profile before this rule),
    while their own zip is accepted."""
    import re

    env = make("ecommerce")
    tried = 0
    for task_id in env.splits()["test"]:
        env.reset(task_id=task_id)
        goal = env.task.goal
        own = {s.name: s.value for s in goal.identity}
        said, _, _, _ = env.step('respond("Hello! Please tell me your name, zip code and everything about your request,'
                                 ' the new address too.")')
        others = [z for z in re.findall(r"\b\d{5}\b", said) if z != own.get("zip")]
        if not others or goal.name not in said or own.get("zip") not in said:
            continue
        obs, _, done, info = env.step(f'find_customer(name="{goal.name}", zip="{others[0]}")')
        assert obs.startswith(f"Not authenticated: the customer did not give '{others[0]}' as their own zip"), obs
        assert not done and "Found customer" not in obs
        obs, _, _, _ = env.step(f'find_customer(name="{goal.name}", zip="{own["zip"]}")')
        assert obs.startswith("Found customer"), obs
        tried += 1
        if tried == 5:
            break
    assert tried == 5


@pytest.mark.parametrize("name", ENVS)
def test_every_reason_is_in_the_policy_and_the_user_never_gives_it(name):
    from agentgym_service import text
    from agentgym_service.goal import reason_leaks

    env = make(name)
    policy = text.flat(env.policy)
    assert [r for r, phrases in env.lexicon.reasons.items() if not any(text.has(policy, text.flat(p)) for p in phrases)] == []
    declared, leaks = set(), []
    for split in ("test", "ood"):
        for task_id in env.splits()[split]:
            env.reset(task_id=task_id)
            declared |= {r for q in env.task.goal.requests if q.forbidden for r in q.reasons}
            leaks += reason_leaks(env.task.goal, env.lexicon)
    assert leaks == [] and declared <= set(env.lexicon.reasons) and len(declared) >= 3


@pytest.mark.parametrize("name", ENVS)
@pytest.mark.parametrize("says", ["no reason", "every reason"])
def test_a_refusal_resolves_a_forbidden_request_only_with_its_reason(name, says):
    """The expert, but its refusals name no rule, or every rule of the policy: it resolves no forbidden request, so it
    wins no task that has one and earns no graded reward there (a refusal without its reason is unjustified)."""
    env = make(name, reward="graded")
    experts = importlib.import_module(f"agentgym_env_{name}.agents")
    every = ", ".join(phrases[0] for phrases in env.lexicon.reasons.values())

    class Unexplained(experts.ExpertAgent):
        def refuse(self, why: str) -> str:
            return super().refuse("our policy does not allow it" if says == "no reason" else every)

    tasks = []
    for split in ("test", "ood"):
        for task_id in sample(env, split, 3):
            env.reset(task_id=task_id)
            if any(q.forbidden for q in env.task.goal.requests):
                tasks.append(task_id)
    assert len(tasks) >= 15
    for task_id in tasks:
        reward, info, _ = play(env, task_id, Unexplained())
        assert not info["success"] and reward == 0.0 and info["unexplained_refusals"] >= 1, (task_id, info)
        assert play(env, task_id, experts.ExpertAgent())[0] == 1.0

"""The three service envs against agents that never apply the policy (issue 36), in-process on a sample of the
test and OOD tasks; ``bench/service_loopholes.py`` runs the same loopholes over HTTP on every task.

- the simulated user never states a value the policy derives (an owner after a rule, a slot, an
  allocation, dependency ids, a shift, an answer), however it is probed;
- an agent that confirms vaguely and writes what the user says, or refuses first and complies after,
  wins nothing, under the 0/1 reward and the graded one.
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

"""BabyAI over HTTP: ``agentgym env serve babyai`` in a subprocess, driven by a client that
knows only the AgentGym wire format (create, reset with data_idx, step, observation, close)."""
from __future__ import annotations

import json

import pytest
from agentgym_env_babyai.env import BabyAIEnv
from agentgym_env_babyai.solvers import oracle

from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.testing import play_over_http

pytestmark = pytest.mark.slow

OPTIONS = {"levels": "easy"}


@pytest.fixture(scope="module")
def server_url():
    with EnvLauncher("babyai", options=OPTIONS) as launcher:
        yield launcher.urls[0]


def _solution(task_id: int) -> tuple[str, list[str]]:
    """The first observation and the oracle's actions for *task_id*, computed in this process."""
    env = BabyAIEnv(**OPTIONS)
    first = env.reset(task_id=task_id)
    actions = []
    for action in oracle(env, first):
        actions.append(action)
        if env.step(action)[2]:
            break
    env.close()
    return first, actions


@pytest.mark.parametrize("task_id", [4, 5002])  # PickupLoc (train) and GoToObj (test)
def test_play_to_success_over_http(server_url, task_id):
    first, actions = _solution(task_id)
    play = play_over_http(server_url, task_id, actions, invalid_action="fly away", invalid_hint="Valid actions")
    assert "go to <object>" in json.dumps(play.info)
    assert play.first_observation == first  # same task in another process: same episode
    assert play.last["reward"] == 1.0 and len(play.steps) == len(actions)

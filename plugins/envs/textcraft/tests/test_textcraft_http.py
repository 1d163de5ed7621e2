"""TextCraft over HTTP: ``agentgym env serve textcraft`` in a subprocess, driven by a client
that knows only the AgentGym wire format (create, reset with data_idx, step, observation, close)."""
from __future__ import annotations

import json

import pytest
from agentgym_env_textcraft.catalog import load_catalog
from agentgym_env_textcraft.env import TextCraftEnv
from agentgym_env_textcraft.solvers import plan

from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.testing import play_over_http

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_url():
    with EnvLauncher("textcraft", startup_timeout=90) as launcher:
        yield launcher.urls[0]


@pytest.mark.parametrize("task_id", [17, 360])  # a training goal and a held-out one
def test_play_to_success_over_http(server_url, task_id):
    env = TextCraftEnv()
    first = env.reset(task_id=task_id)
    actions = plan(load_catalog(), env.goal)
    play = play_over_http(server_url, task_id, actions, invalid_action="mine diamonds", invalid_hint="Valid actions")
    assert "craft <count> <item> using" in json.dumps(play.info)
    assert play.first_observation == first  # same task in another process: same episode
    failed = [(action, answer["observation"]) for action, answer in play.steps if answer["info"]["action_failed"]]
    assert not failed and play.last["reward"] == 1.0 and len(play.steps) == len(actions)

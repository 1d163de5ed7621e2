"""codefix through a real env server on loopback, spoken to in the AgentGym wire format."""
import pytest
from agentgym_env_codefix import plugin
from agentgym_env_codefix.env import CodeFixEnv
from agentgym_env_codefix.problems import tasks
from agentgym_env_codefix.solvers import scripted_actions

from agentgym_core.env import host
from agentgym_core.testing import play_over_http


@pytest.fixture
def manager(plugin_manager, register_plugin):
    register_plugin(plugin, name="codefix")
    return plugin_manager


def test_play_to_success_and_bad_action_over_http(manager):
    server = host.build_env_server("codefix", manager=manager)
    task_id = CodeFixEnv().splits()["test"][0]
    with host.ServerThread(server) as srv:
        play = play_over_http(srv.url, task_id, scripted_actions(tasks()[task_id]),
                              invalid_action="Action: fix it please", invalid_hint="edit N-M")
    assert play.info["action_format"] == "free" and play.info["splits"]["test"] > 0
    assert "solution.py" in play.first_observation
    assert play.last["reward"] == 1.0

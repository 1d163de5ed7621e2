"""codefix through a real env server on loopback, spoken to in the AgentGym wire format."""
import httpx
import pytest

serving = pytest.importorskip("agentgym_core.env.serving", reason="core's env server is not available")

from agentgym_env_codefix import plugin  # noqa: E402
from agentgym_env_codefix.env import CodeFixEnv  # noqa: E402
from agentgym_env_codefix.problems import tasks  # noqa: E402
from agentgym_env_codefix.solvers import scripted_actions  # noqa: E402


@pytest.fixture
def manager(plugin_manager, register_plugin):
    register_plugin(plugin, name="codefix")
    return plugin_manager


def test_play_to_success_and_bad_action_over_http(manager):
    server = serving.build_env_server("codefix", manager=manager)
    with serving.ServerThread(server) as srv, httpx.Client(base_url=srv.url, timeout=60) as http:
        info = http.get("/info").json()
        assert info["action_format"] == "free" and info["splits"]["test"] > 0
        sid = http.post("/create").json()["id"]
        task_id = CodeFixEnv().splits()["test"][0]
        first = http.post("/reset", json={"id": sid, "data_idx": task_id}).json()
        assert "solution.py" in first["observation"]
        bad = http.post("/step", json={"id": sid, "action": "Action: fix it please"}).json()
        assert bad["done"] is False and bad["info"]["invalid_action"] is True
        assert "edit N-M" in bad["observation"]
        for action in scripted_actions(tasks()[task_id]):
            out = http.post("/step", json={"id": sid, "action": action}).json()
        assert out["done"] is True and out["reward"] == 1.0 and out["info"]["success"] is True
        http.post("/close", json={"id": sid})

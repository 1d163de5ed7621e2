"""The AgentGym wire format against the installed env plugins (skipped, with the reason, when not installed)."""
from __future__ import annotations

import httpx
import pytest

from agentgym_core.env.host import ServerThread, build_env_server
from agentgym_core.plugins import get_plugin_manager


@pytest.mark.slow
@pytest.mark.parametrize("name", ["babyai", "textcraft"])
def test_plain_client_plays_an_installed_env(name):
    manager = get_plugin_manager(fresh=True)
    if name not in manager.registry("envs"):
        pytest.skip(f"env plugin {name!r} is not installed")
    with ServerThread(build_env_server(name, manager=manager)) as srv, httpx.Client(base_url=srv.url, timeout=60) as http:
        info = http.get("/info").json()
        assert info["name"] == name and info["instruction"] and info["splits"]["train"] > 0
        env_id = http.post("/create").json()["id"]
        first = http.post("/reset", json={"id": env_id, "data_idx": 0}).json()
        assert isinstance(first["observation"], str) and first["observation"]
        step = http.post("/step", json={"id": env_id, "action": "inventory" if name == "textcraft" else "turn left"}).json()
        assert set(step) >= {"observation", "reward", "done", "info"} and isinstance(step["observation"], str)
        assert http.get("/observation", params={"id": env_id}).json() == step["observation"]
        assert http.post("/close", json={"id": env_id}).json()["closed"] is True

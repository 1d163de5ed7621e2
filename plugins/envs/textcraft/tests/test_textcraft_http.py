"""TextCraft over HTTP: ``agentgym env serve textcraft`` in a subprocess, driven by a client
that knows only the AgentGym wire format (create, reset with data_idx, step, observation, close)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import httpx
import pytest
from agentgym_env_textcraft.catalog import load_catalog
from agentgym_env_textcraft.env import TextCraftEnv
from agentgym_env_textcraft.solvers import plan

pytest.importorskip("agentgym_core.env.server")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_url():
    cmd = [sys.executable, "-m", "agentgym_core.cli.main", "env", "serve", "textcraft", "--port", "0",
           "--exit-with-parent", str(os.getpid())]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=90)
    try:
        if not line or "listening on " not in line[0]:
            proc.kill()
            pytest.fail(f"env server did not start: {line} {proc.stderr.read()[-2000:]}")
        yield line[0].split("listening on ")[1].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("task_id", [17, 360])  # a training goal and a held-out one
def test_play_to_success_over_http(server_url, task_id):
    env = TextCraftEnv()
    first = env.reset(task_id=task_id)
    actions = plan(load_catalog(), env.goal)
    with httpx.Client(base_url=server_url, timeout=60) as http:
        info = http.get("/info").json()
        assert "craft <count> <item> using" in json.dumps(info)
        sid = http.post("/create").json()["id"]
        reset = http.post("/reset", json={"id": sid, "data_idx": task_id}).json()
        assert reset["observation"] == first  # same task in another process: same episode
        bad = http.post("/step", json={"id": sid, "action": "mine diamonds"}).json()
        assert bad["info"]["invalid_action"] is True and "Valid actions" in bad["observation"]
        for action in actions:
            result = http.post("/step", json={"id": sid, "action": action}).json()
            assert not result["info"]["action_failed"], (action, result["observation"])
        assert result["done"] is True and result["reward"] == 1.0 and result["info"]["success"] is True
        assert http.get("/observation", params={"id": sid}).json() == result["observation"]
        assert http.post("/close", json={"id": sid}).status_code == 200

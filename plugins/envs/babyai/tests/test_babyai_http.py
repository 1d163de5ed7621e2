"""BabyAI over HTTP: ``agentgym env serve babyai`` in a subprocess, driven by a client that
knows only the AgentGym wire format (create, reset with data_idx, step, observation, close)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import httpx
import pytest
from agentgym_env_babyai.env import BabyAIEnv
from agentgym_env_babyai.solvers import oracle

pytest.importorskip("agentgym_core.env.server")
pytestmark = pytest.mark.slow

OPTIONS = {"levels": "easy"}


@pytest.fixture(scope="module")
def server_url():
    cmd = [sys.executable, "-m", "agentgym_core.cli.main", "env", "serve", "babyai", "--port", "0",
           "--options", json.dumps(OPTIONS), "--exit-with-parent", str(os.getpid())]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=60)
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
    with httpx.Client(base_url=server_url, timeout=30) as http:
        info = http.get("/info").json()
        assert "go to <object>" in json.dumps(info)
        sid = http.post("/create").json()["id"]
        reset = http.post("/reset", json={"id": sid, "data_idx": task_id}).json()
        assert reset["observation"] == first  # same task in another process: same episode
        bad = http.post("/step", json={"id": sid, "action": "fly away"}).json()
        assert bad["info"]["invalid_action"] is True and "Valid actions" in bad["observation"]
        for action in actions:
            result = http.post("/step", json={"id": sid, "action": action}).json()
        assert result["done"] is True and result["reward"] == 1.0 and result["info"]["success"] is True
        assert http.get("/observation", params={"id": sid}).json() == result["observation"]
        assert http.post("/close", json={"id": sid}).status_code == 200

"""ecommerce over HTTP: ``agentgym env serve ecommerce`` in a subprocess, and the expert wins every test task
through the AgentGym wire format."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from agentgym_core.env.client import HTTPEnvPool
from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.testing import play_over_http
from agentgym_env_ecommerce.agents import ExpertAgent
from agentgym_env_ecommerce.env import ECommerceServiceEnv
from agentgym_service.play import play_pool


@pytest.fixture(scope="module")
def server_url():
    with EnvLauncher("ecommerce", startup_timeout=90) as launcher:
        yield launcher.urls[0]


def test_info_describes_splits_and_categories(server_url):
    info = httpx.get(f"{server_url}/info").json()
    env = ECommerceServiceEnv()
    assert info["name"] == "ecommerce" and info["distribution"] == "agentgym-env-ecommerce"
    assert info["action_format"] == "react" and "transfer_to_human(summary)" in info["instruction"]
    assert info["splits"] == {name: len(ids) for name, ids in env.splits().items()}
    assert info["split_ranges"] == {"train": None, "test": None, "ood": [1400, 1600]}
    assert set(info["categories"]["test"]) == set(info["intents"])
    assert {t["function"]["name"] for t in info["tools"]} >= {"respond", "find_customer", "return_items"}
    assert info["policy"].startswith("Policy:")


def test_the_expert_solves_the_whole_test_split_over_http(server_url):
    test = ECommerceServiceEnv().splits()["test"]
    first = play_over_http(server_url, test[0], ExpertAgent(), invalid_action="look around",
                           invalid_hint="is not a tool call")
    assert first.first_observation == ECommerceServiceEnv().reset(task_id=test[0])
    assert first.last["reward"] == 1.0

    async def rest():  # the others as rollout plays them: concurrent sessions, numbered (batched) steps
        async with HTTPEnvPool([server_url]) as pool:
            return await play_pool(pool, test[1:], lambda _: ExpertAgent())

    results = asyncio.run(rest())
    assert sorted(results) == sorted(test[1:])
    failed = {t: info.get("end_reason") for t, (reward, info) in results.items() if reward != 1.0}
    assert not failed


def test_bad_task_ids_and_hostile_actions_are_4xx_or_error_observations(server_url):
    with httpx.Client(base_url=server_url, timeout=30) as http:
        sid = http.post("/create").json()["id"]
        bad = http.post("/reset", json={"id": sid, "data_idx": 1600})
        assert bad.status_code == 422 and "0-1599" in bad.json()["error"]
        http.post("/reset", json={"id": sid, "data_idx": 3})
        for action in ("x" * 100_000, "respond(" + "[" * 50_000, '{"name": "respond", "arguments": ' + "[" * 9000,
                       "get_product(" + "9" * 5000 + ")", "\u202e\u0000 \U0001d54f"):
            out = http.post("/step", json={"id": sid, "action": action})
            assert out.status_code == 200 and out.json()["info"]["invalid_action"], out.text[:200]
        lone = http.post("/step", content=b'{"id": %d, "action": "\\ud800 get_order(1)"}' % sid,
                         headers={"content-type": "application/json"})  # a lone surrogate, as JSON allows
        assert lone.status_code == 200 and lone.json()["info"]["invalid_action"]

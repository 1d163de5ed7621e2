"""ecommerce over HTTP: ``agentgym env serve ecommerce`` in a subprocess, and the reference agent wins
every test task through the AgentGym wire format."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from agentgym_core.env.client import HTTPEnvPool
from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.testing import play_over_http
from agentgym_env_ecommerce.agents import ReferenceAgent, play_pool
from agentgym_env_ecommerce.env import ECommerceServiceEnv


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
    assert info["split_ranges"] == {"train": None, "test": None}
    assert set(info["categories"]["test"]) == set(info["intents"])


def test_reference_agent_solves_the_whole_test_split_over_http(server_url):
    test = ECommerceServiceEnv().splits()["test"]
    first = play_over_http(server_url, test[0], ReferenceAgent(), invalid_action="look around",
                           invalid_hint="is not a tool call")
    assert first.first_observation == ECommerceServiceEnv().reset(task_id=test[0])
    assert first.last["reward"] == 1.0

    async def rest():  # the others as rollout plays them: concurrent sessions, numbered (batched) steps
        async with HTTPEnvPool([server_url]) as pool:
            return await play_pool(pool, test[1:], lambda _: ReferenceAgent())

    results = asyncio.run(rest())
    assert sorted(results) == sorted(test[1:])
    failed = {t: info.get("end_reason") for t, (reward, info) in results.items() if reward != 1.0}
    assert not failed

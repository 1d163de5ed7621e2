"""``compat: agentgym``: textcraft answers as AgentGym's own textcraft server (agentenv-textcraft) does.

GOALS was extracted by running AgentGym's server code (WooooDyy/AgentGym) on ext4, whose
directory listing gives the recipe loading order that AgentGym's goal order depends on;
data/agentgym_textcraft_episodes.json holds that code's answers to scripted actions (a
solution with probes mixed in), which a client written from AgentGym's ``TextCraftEnvClient``
replays against our server. Crafting commands are compared as a set of needed recipes:
AgentGym draws distractors and orders the list in Python's per-process hash order.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from agentgym_env_textcraft.env import TextCraftConfig, TextCraftEnv

from agentgym_core.env.host import ServerThread, build_env_server
from agentgym_core.errors import ConfigError
from agentgym_core.plugins import get_plugin_manager
from agentgym_core.testing import check_env

#: data_idx -> (AgentGym's goal, its crafting depth): the items of depth >= 1 sorted by depth, idx % 544.
GOALS = {
    0: ("light blue dye", 1),
    1: ("emerald block", 1),
    2: ("glass pane", 1),
    17: ("lead", 1),
    100: ("stripped birch wood", 1),
    250: ("yellow wool", 2),
    300: ("golden boots", 2),
    400: ("iron chestplate", 2),
    543: ("cyan banner", 4),
    544: ("light blue dye", 1),
    1000: ("lime carpet", 3),
}
EPISODES = json.loads((Path(__file__).parent / "data" / "agentgym_textcraft_episodes.json").read_text())


class AgentGymTextCraftClient:
    """The requests and reads of AgentGym's ``TextCraftEnvClient`` (agentenv/envs/textcraft.py), over httpx."""

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=60)
        created = self.http.post("/create", json={"minecraft_dir": "agentenv_textcraft/", "commands": None,
                                                  "goal": None}).json()
        self.env_id, self.info = created["id"], {"observation": created["observation"], "reward": 0, "done": False}

    def post(self, path: str, **data) -> dict:
        reply = self.http.post(f"/{path}", json={**data, "id": self.env_id})
        assert reply.status_code == 200, reply.text
        return reply.json()

    def reset(self, idx: int) -> dict:
        response = self.post("reset", data_idx=idx)
        self.info.update({"observation": response["observation"], "reward": 0, "done": False})
        return response

    def step(self, action: str) -> dict:
        found = re.findall(r"Action:\s*(.*?)(?=\n|$)", action, re.DOTALL)
        response = self.post("step", action=" ".join(re.sub(r"[^A-Za-z0-9, ]+", "", found[-1] if found else "").split()))
        self.info = {"observation": response["observation"], "reward": response["reward"], "done": response["done"]}
        return response


@pytest.fixture(scope="module")
def env():
    return TextCraftEnv(compat="agentgym")


@pytest.fixture(scope="module")
def server_url():
    manager = get_plugin_manager(fresh=True)
    with ServerThread(build_env_server("textcraft", {"compat": "agentgym"}, manager=manager)) as srv:
        yield srv.url


def test_the_same_data_idx_is_agentgyms_goal(env):
    for data_idx, (goal, depth) in GOALS.items():
        first = env.reset(task_id=data_idx)
        assert first.endswith(f"\n\nGoal: craft {goal}."), (data_idx, first.splitlines()[-1])
        assert env.category(data_idx) == f"depth{depth}"
    assert len(env.agentgym_goals) == 544


@pytest.mark.parametrize("episode", EPISODES, ids=[f"data_idx={e['data_idx']}" for e in EPISODES])
def test_agentgym_client_gets_agentgyms_answers(server_url, episode):
    client = AgentGymTextCraftClient(server_url)
    try:
        first = client.reset(episode["data_idx"])
        lines = first["observation"].splitlines()
        assert lines[0] == "Crafting commands:" and lines[-1] == episode["goal_line"]
        assert set(episode["needed"]) <= set(lines[1:-2]) and len(lines[1:-2]) <= len(episode["needed"]) + 10
        for turn, (action, expected) in enumerate(episode["steps"]):
            got = client.step(f"Thought:\nnext step\n\nAction:\n{action}")
            assert {key: got[key] for key in expected} == expected, (turn, action)
        assert client.http.get(f"/observation?id={client.env_id}").json() == client.info["observation"]
    finally:
        client.post("close")
        client.http.close()


def test_compat_mode_keeps_the_env_contract():
    check_env(TextCraftEnv, options={"compat": "agentgym"}, task_ids=(0, 543),
              actions=("inventory", "get 1 blue orchid", "Craft everything!", ""))


def test_compat_splits_instruction_and_default_mode(env):
    splits = env.splits()
    assert splits["test"] == list(range(4, 544, 5)) and len(splits["train"]) == 436
    assert not set(splits["train"]) & set(splits["test"])
    assert "always give the count" in env.instruction and env.describe()["compat"] == "agentgym"
    default = TextCraftEnv()
    assert default.reset(task_id=0).endswith("Goal: craft acacia boat.") and default.agentgym_goals is None
    assert default.step("get 2 acacia logs")[0] == "Got 2 acacia logs"


def test_compat_option_is_checked_when_the_config_loads():
    with pytest.raises(ConfigError, match="env.compat must be 'none'.*or 'agentgym'.*got 'AgentGym'"):
        TextCraftConfig(compat="AgentGym")
    TextCraftConfig(compat="agentgym")

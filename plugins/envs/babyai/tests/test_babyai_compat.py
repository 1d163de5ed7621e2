"""``compat: agentgym``: babyai answers as AgentGym's own babyai server (agentenv-babyai) does.

TASKS was extracted by running AgentGym's server code (WooooDyy/AgentGym, with the minigrid
< 2.5 it pins) for those ids; data/agentgym_babyai_episodes.json holds that server's answers to
whole episodes (recorded the same way), which a client written from AgentGym's
``BabyAIEnvClient`` replays against our server.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from agentgym_env_babyai.env import BabyAIConfig, BabyAIEnv

from agentgym_core.env.host import ServerThread, build_env_server
from agentgym_core.errors import ConfigError
from agentgym_core.plugins import get_plugin_manager
from agentgym_core.testing import check_env

#: data_idx -> (AgentGym's level, goal) from AgentGym's server code (level idx % 40 + 1, seed idx // 40).
TASKS = {
    0: ("GoToRedBallGrey", "go to the red ball"),
    1: ("GoToRedBall", "go to the red ball"),
    2: ("GoToRedBallNoDists", "go to the red ball"),
    3: ("GoToObjS6", "go to the blue key"),
    4: ("GoToLocalS8N7", "go to a green key"),
    11: ("Open", "open the green door"),
    17: ("UnblockPickup", "pick up the yellow key"),
    39: ("BossLevelNoUnlock", "put the red box next to a grey door and open a purple door and pick up a key and go "
                              "to the yellow box"),
    40: ("GoToRedBallGrey", "go to the red ball"),
    77: ("MiniBossLevel", "pick up the yellow box and put the purple ball next to the blue box and put the purple "
                          "ball on your right next to the green key and go to the ball on your right"),
    155: ("SynthLoc", "go to the red box"),  # minigrid 3 alone would say "go to a door on your right"
    156: ("SynthSeq", "put the purple box next to the grey box and go to the door on your right"),
    1000: ("GoToRedBallGrey", "go to the red ball"),
    1804: ("GoToLocalS8N7", "go to a red box"),
    2994: ("SynthS5R2", "open the grey door"),
    3999: ("BossLevelNoUnlock", "pick up a key and open a red door"),
}
EPISODES = json.loads((Path(__file__).parent / "data" / "agentgym_babyai_episodes.json").read_text())


class AgentGymBabyAIClient:
    """The requests and reads of AgentGym's ``BabyAIEnvClient`` (agentenv/envs/babyai.py), over httpx."""

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=60, event_hooks={"response": [_must_be_200]})
        self.env_id = self.http.post("/create").json()["id"]

    def _post(self, path: str, data: dict) -> dict:
        return self.http.post(f"/{path}", json={**data, "id": self.env_id}).json()

    def reset(self, data_idx: int) -> dict:
        response = self._post("reset", {"data_idx": data_idx})
        self.info = {key: response[key] for key in ("observation", "reward", "score", "done")}
        return response

    def step(self, action: str) -> dict:
        matches = re.findall(r"Action:\s*(.*?)(?=\n|$)", action, re.DOTALL)
        action = " ".join(re.sub(r"[^A-Za-z0-9, ]+", "", matches[-1] if matches else "").split()).strip()
        response = self._post("step", {"action": action})
        self.info = {key: response[key] for key in ("observation", "reward", "score", "done")}
        return response

    def observation(self) -> dict:  # its _get("observation")
        return self.http.get(f"/observation?id={self.env_id}").json()


def _must_be_200(response: httpx.Response) -> None:
    assert response.status_code == 200, f"{response.request.url} answered {response.status_code}"


@pytest.fixture(scope="module")
def server_url():
    manager = get_plugin_manager(fresh=True)
    with ServerThread(build_env_server("babyai", {"compat": "agentgym"}, manager=manager)) as srv:
        yield srv.url


def test_the_same_data_idx_is_agentgyms_task():
    env = BabyAIEnv(compat="agentgym")
    for data_idx, (level, goal) in TASKS.items():
        first = env.reset(task_id=data_idx)
        assert first.startswith(f"Your goal: {goal}\n"), (data_idx, first.splitlines()[0])
        assert env.category(data_idx) == level
        assert "\nAvailable actions: [\"turn left\", \"turn right\"" in first
    env.close()


@pytest.mark.parametrize("episode", EPISODES, ids=[f"data_idx={e['data_idx']}" for e in EPISODES])
def test_agentgym_client_gets_agentgyms_answers(server_url, episode):
    """Observations, rewards (minigrid's discounted one), scores and done, step by step."""
    client = AgentGymBabyAIClient(server_url)
    try:
        first = client.reset(episode["data_idx"])
        assert {key: first[key] for key in episode["reset"]} == episode["reset"]
        for turn, (action, expected) in enumerate(episode["steps"]):
            got = client.step(f"Thought:\nI will act.\n\nAction:\n{action}")
            assert {key: got[key] for key in expected} == expected, (turn, action)
        if "observation" in episode:  # GET /observation is an object, as AgentGym's
            assert client.observation() == episode["observation"]
    finally:
        client._post("close", {})
        client.http.close()


def test_agentgyms_action_vocabulary_and_reward():
    env = BabyAIEnv(compat="agentgym")
    env.reset(task_id=2)
    obs, reward, done, info = env.step("go to red ball 1")
    assert done and info["success"] and reward == pytest.approx(1 - 0.9 * 7 / 64)  # minigrid: 7 moves of 64
    assert obs.endswith('Available actions: ["turn left", "turn right", "move forward", "pickup red ball 1", '
                        '"go to red ball 1", "check available actions"]')
    env.reset(task_id=2)
    obs, reward, done, info = env.step("pick up red ball 1")  # AgentGym's prompt says it; its server refuses it
    assert info["invalid_action"] and obs.startswith("The action is not recognized.") and not done
    env.close()


def test_compat_mode_keeps_the_env_contract():
    check_env(BabyAIEnv, options={"compat": "agentgym"}, task_ids=(2, 155, 3999),
              actions=("go to red ball 1", "check available actions", "fly $$$", ""))


def test_compat_splits_categories_and_instruction():
    env = BabyAIEnv(compat="agentgym", train_seeds=3, test_seeds=2)
    splits = env.splits()
    assert splits == {"train": list(range(120)), "test": list(range(120, 200))}
    assert env.category(2) == "GoToRedBallNoDists" and env.category(202) == "GoToRedBallNoDists"
    assert "toggle and go through" in env.instruction and env.describe()["compat"] == "agentgym"
    assert "Available actions" in BabyAIEnv(compat="agentgym", brief=True).instruction


def test_default_mode_is_unchanged():
    env = BabyAIEnv()
    first = env.reset(task_id=2)
    assert first.startswith("Your mission: go to the ") and "Available actions" not in first
    assert env.splits() == {"train": range(15000), "test": range(15000, 16500)}
    assert env.wire_fields("observation") is None


def test_compat_option_is_checked_when_the_config_loads():
    with pytest.raises(ConfigError, match="env.compat must be 'none'.*or 'agentgym'.*got 'agentgm'"):
        BabyAIConfig(compat="agentgm")
    with pytest.raises(ConfigError, match="env.levels does not apply with env.compat=agentgym"):
        BabyAIConfig(compat="agentgym", levels="easy")
    BabyAIConfig(compat="agentgym")  # the default levels are fine

"""``compat: agentgym``: sciworld answers as AgentGym's own sciworld server (agentenv-sciworld) does.

GAMES was extracted by running AgentGym's server code (WooooDyy/AgentGym): its ``data_idx`` numbers
the (task, variation) pairs of ScienceWorld's tasks without 5-1, 5-2, 9-1, 9-2, 9-3, 10-1 and
10-2. data/agentgym_sciworld_episodes.json holds that server's answers to scripted actions, which
a client written from AgentGym's ``SciworldEnvClient`` replays against our server (Java needed).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from agentgym_env_sciworld.env import SciWorldConfig, SciWorldEnv
from agentgym_env_sciworld.tasks import AGENTGYM

from agentgym_core.env.host import ServerThread, build_env_server
from agentgym_core.errors import ConfigError
from agentgym_core.plugins import get_plugin_manager
from agentgym_core.testing import check_env

#: data_idx -> (task, variation) in AgentGym's game list (ours agrees up to 4,135).
GAMES = {
    0: ("boil", 0),
    29: ("boil", 29),
    4135: ("find-animal", 299),
    4136: ("chemistry-mix", 0),
    4200: ("chemistry-mix-paint-secondary-color", 32),
    4300: ("lifespan-longest-lived", 60),
    4333: ("lifespan-longest-lived", 93),
    4500: ("lifespan-longest-lived-then-shortest-lived", 10),
    4615: ("identify-life-stages-1", 0),
    4638: ("identify-life-stages-2", 9),
}
REFERENCE = json.loads((Path(__file__).parent / "data" / "agentgym_sciworld_episodes.json").read_text())
needs_java = pytest.mark.skipif(shutil.which("java") is None,
                                reason="ScienceWorld needs a Java 17 runtime (openjdk-17-jre-headless)")


class AgentGymSciWorldClient:
    """The requests and reads of AgentGym's ``SciworldEnvClient`` (agentenv/envs/sciworld.py, ReAct format)."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http
        self.env_id = http.post("/create").json()["id"]
        self.info: dict = {}

    def observe(self) -> str:
        return self.info["observation"]

    def reset(self, data_idx: int) -> dict:
        response = self.http.post("/reset", json={"data_idx": data_idx, "id": self.env_id}).json()
        self.info = {"observation": response["task_description"] + "\n" + response["observation"],
                     "reward": 0, "score": 0, "done": False}
        return response

    def step(self, text: str) -> dict:
        action = text.rsplit("Action:", 1)[-1].strip()  # the ReAct adapter's parse
        response = self.http.post("/step", json={"action": action, "id": self.env_id}).json()
        self.info = {key: response[key] for key in ("observation", "reward", "score", "done")}
        return response


def test_the_same_data_idx_is_agentgyms_task_without_a_jvm():
    env = SciWorldEnv(compat="agentgym")
    assert AGENTGYM.total == REFERENCE["n_games"] == 4639
    for data_idx, (task, variation) in GAMES.items():
        assert AGENTGYM.locate(data_idx)[0].name == task and AGENTGYM.locate(data_idx)[1] == variation
        assert env.category(data_idx) == task
    splits = env.splits()
    assert sum(len(ids) for ids in splits.values()) == 4639 and 4136 in splits["train"]
    assert "grow-plant" not in env.describe()["tasks"] and env.describe()["compat"] == "agentgym"
    assert "valid actions" not in env.instruction  # the simulator answers that itself here
    env.close()


def test_compat_option_and_tasks_are_checked():
    with pytest.raises(ConfigError, match="env.compat must be 'none'.*or 'agentgym'.*got 'yes'"):
        SciWorldConfig(compat="yes")
    with pytest.raises(ConfigError, match="not in AgentGym's list of ScienceWorld tasks"):
        SciWorldEnv(compat="agentgym", tasks=["grow-plant"])
    only = SciWorldEnv(compat="agentgym", tasks=["chemistry-mix"]).splits()
    assert only["train"] == list(range(4136, 4152))


@pytest.fixture(scope="module")
def server_url():
    if shutil.which("java") is None:
        pytest.skip("ScienceWorld needs a Java 17 runtime (openjdk-17-jre-headless)")
    manager = get_plugin_manager(fresh=True)
    with ServerThread(build_env_server("sciworld", {"compat": "agentgym"}, manager=manager)) as srv:
        yield srv.url


@pytest.mark.slow
@needs_java
def test_agentgym_client_gets_agentgyms_answers(server_url):
    """Reset fields, the simulator's texts, the 0-100 score and its deltas, done on success and failure."""
    with httpx.Client(base_url=server_url, timeout=120) as http:
        client = AgentGymSciWorldClient(http)
        for episode in REFERENCE["episodes"]:
            expected = episode["reset"]
            got = client.reset(episode["data_idx"])
            for key in ("task_name", "var_num", "task_description", "reward", "score", "done", "deleted"):
                assert got[key] == expected[key], (episode["data_idx"], key)
            # what AgentGym's agent reads first, task and room, is our observation (see docs/envs.md)
            assert got["observation"] == f"{expected['task_description']}\n{expected['observation']}"
            for turn, (action, answer) in enumerate(episode["steps"]):
                got = client.step(f"Thought:\nLet me act.\n\nAction:\n{action}")
                assert {key: got[key] for key in answer} == answer, (episode["data_idx"], turn, action)
            if "observation" in episode:
                assert http.get(f"/observation?id={client.env_id}").json() == episode["observation"]
        assert http.post("/close", json={"id": client.env_id}).status_code == 200
    check_env(SciWorldEnv, options={"compat": "agentgym"}, task_ids=(4136,), actions=("look around", "valid actions"))

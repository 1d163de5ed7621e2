"""``BaseEnv.wire_fields``: env-specific fields in the server's answers, over real HTTP on loopback."""
from __future__ import annotations

import httpx
import pytest

from agentgym_core import BaseEnv
from agentgym_core.env.server import EnvServer
from agentgym_core.env.host import ServerThread


class Plain(BaseEnv):
    """Does not override wire_fields: the standard answers."""

    action_format = "free"

    def reset(self, *, task_id=None, seed=None) -> str:
        self.n = 0
        return f"task {task_id}"

    def step(self, action: str):
        self.n += 1
        return f"{action} {self.n}", 0.5, self.n >= 2, {"n": self.n}


class Dialect(Plain):
    """Answers with extra fields, and GET /observation as an object."""

    bad = None

    def wire_fields(self, call: str):
        if self.bad is not None:
            return self.bad
        if call == "reset":
            return {"task_description": "count to two", "deleted": False}
        if call == "step":
            return {"moves": self.n}
        return {"observation": f"latest: step {self.n}", "deleted": False}


def serve(env_cls):
    return ServerThread(EnvServer(env_cls, name=env_cls.__name__.lower()))


def test_standard_answers_without_wire_fields():
    assert Plain().wire_fields("reset") is None  # the contract's default
    with serve(Plain) as srv, httpx.Client(base_url=srv.url) as http:
        sid = http.post("/create").json()["id"]
        assert http.post("/reset", json={"id": sid, "data_idx": 3}).json() == {
            "id": sid, "observation": "task 3", "reward": 0.0, "score": 0.0, "done": False}
        step = http.post("/step", json={"id": sid, "action": "go"}).json()
        assert step == {"observation": "go 1", "reward": 0.5, "score": 0.5, "done": False, "info": {"n": 1}}
        assert http.get("/observation", params={"id": sid}).json() == "go 1"  # a bare string


def test_extra_fields_are_merged_into_reset_step_batch_and_observation():
    with serve(Dialect) as srv, httpx.Client(base_url=srv.url) as http:
        sid = http.post("/create").json()["id"]
        first = http.post("/reset", json={"id": sid, "data_idx": 3}).json()
        assert first == {"id": sid, "observation": "task 3", "reward": 0.0, "score": 0.0, "done": False,
                         "task_description": "count to two", "deleted": False}
        step = http.post("/step", json={"id": sid, "action": "go", "seq": 1}).json()
        assert step["moves"] == 1 and step["observation"] == "go 1" and step["info"] == {"n": 1}
        # a retried step gets the stored answer, extra fields included
        assert http.post("/step", json={"id": sid, "action": "go", "seq": 1}).json() == step
        batch = http.post("/batch", json={"ops": [{"op": "step", "id": sid, "action": "go", "seq": 2}]}).json()
        assert batch["results"][0]["body"]["moves"] == 2 and batch["results"][0]["body"]["done"] is True
        assert http.get("/observation", params={"id": sid}).json() == {"observation": "latest: step 2", "deleted": False}


@pytest.mark.parametrize("bad, words", [
    ({"reward": 1.0}, "may not replace the server's own field(s) reward"),
    (["not", "a", "dict"], "expected None or a dict with string keys"),
])
def test_bad_extra_fields_are_a_500_naming_the_problem(bad, words):
    with serve(Dialect) as srv, httpx.Client(base_url=srv.url) as http:
        sid = http.post("/create").json()["id"]
        Dialect.bad = bad
        try:
            reply = http.post("/reset", json={"id": sid, "data_idx": 0})
            assert reply.status_code == 500 and words in reply.json()["error"]
            assert "raised in reset(task_id=0)" in reply.json()["error"] and reply.json()["needs_reset"] is True
        finally:
            Dialect.bad = None
        assert http.post("/reset", json={"id": sid, "data_idx": 0}).status_code == 200
        Dialect.bad = bad
        try:
            reply = http.post("/step", json={"id": sid, "action": "go"})
            assert reply.status_code == 500 and words in reply.json()["error"]
            if isinstance(bad, list):  # GET /observation checks the type too (replacing "observation" is allowed)
                reply = http.get("/observation", params={"id": sid})
                assert reply.status_code == 500 and "wire_fields('observation')" in reply.json()["error"]
        finally:
            Dialect.bad = None

"""Every bundled env, served as users run it, against malformed, huge, nested, unicode and
JSON-injection actions (only 200s with an observation, never a 5xx), and against a schema-driven
fuzzer on its own ``/openapi.json`` (schemathesis ``--checks all``: a bad request is a 4xx, the
server refuses what its schema forbids, accepts what it allows).

The schemathesis part is the documented command (docs/envs.md, "Fuzzing a served env"), run
per env in a subprocess; both parts are slow (one server process per env)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.plugins import get_plugin_manager

pytestmark = pytest.mark.slow

BUNDLED = ("babyai", "textcraft", "sciworld", "searchqa", "webnav", "codefix", "ecommerce", "office", "projects")
SERVICE = {"ecommerce", "office", "projects"}
#: Actions no model should write, and some it might: each must come back as a 200 with an observation.
HOSTILE = [
    "", "   \n\t ", "x" * 200_000, "(" * 50_000, "[" * 30_000 + "]" * 30_000, "Action: " * 5_000,
    '{"name": "respond", "arguments": ' + "[" * 20_000, '{"name": "get_order", "arguments": {"order_id": {"a": [1]}}}',
    '"}, "id": 0, "action": "inject", "x": {"', "\u202e\u0000\u0007 drop table; --", "\U0001f600" * 3_000,
    "Sure, I will not call cancel_order(order_id=\"#W1234\", reason=\"no longer needed\")",
    "respond(" + "9" * 5_000 + ")", "go to " + "north " * 10_000,
]


def _installed() -> list[str]:
    names = set(get_plugin_manager().registry("envs").names())
    return [name for name in BUNDLED if name in names]


@pytest.fixture(scope="module", params=_installed())
def served(request):
    with EnvLauncher(request.param, startup_timeout=120) as launcher:
        yield request.param, launcher.urls[0]


def _reset(http: httpx.Client) -> int:
    sid = http.post("/create").json()["id"]
    tasks = http.get("/tasks").json()["splits"]
    ids = tasks.get("test") or tasks["train"]
    first = ids["range"][0] if isinstance(ids, dict) else ids[0]
    assert http.post("/reset", json={"id": sid, "data_idx": first}).status_code == 200
    return sid


def test_hostile_actions_are_observations_and_health_answers_during_them(served):
    name, url = served
    with httpx.Client(base_url=url, timeout=120) as http:
        sid = _reset(http)
        health: list[int] = []
        stop = threading.Event()

        def poll() -> None:  # /health must keep answering while the env works on a hostile action
            with httpx.Client(base_url=url, timeout=30) as side:
                while True:  # at least once, however fast the steps are
                    health.append(side.get("/health").status_code)
                    if stop.is_set():
                        break

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        try:
            for action in HOSTILE:
                resp = http.post("/step", json={"id": sid, "action": action})
                assert resp.status_code == 200, (name, action[:40], resp.text[:300])
                body = resp.json()
                assert isinstance(body["observation"], str)
                if name in SERVICE and action.strip():
                    assert body["info"]["invalid_action"] or body["done"], (name, action[:40], body["observation"][:200])
                if body["done"]:
                    sid = _reset(http)
            lone = http.post("/step", content=b'{"id": %d, "action": "\\ud800\\udfff\\ud800 x"}' % sid,
                             headers={"content-type": "application/json"})
            assert lone.status_code == 200 and isinstance(lone.json()["observation"], str)
        finally:
            stop.set()
            watcher.join(30)
        assert health and set(health) == {200}


def test_schemathesis_checks_all_finds_nothing(served, tmp_path):
    name, url = served
    st = Path(sys.executable).with_name("st")
    if not st.exists() and shutil.which("st") is None:
        pytest.skip("schemathesis is not installed (pip install -e '.[test]')")
    with httpx.Client(base_url=url, timeout=60) as http:  # live sessions, so some generated ids hit real ones
        for _ in range(3):
            _reset(http)
    out = subprocess.run([str(st) if st.exists() else "st", "run", f"{url}/openapi.json", "--checks", "all",
                          "--max-examples", "100", "--workers", "1", "--seed", "26", "--no-color"],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert out.returncode == 0, f"{name}: schemathesis found problems:\n{out.stdout[-6000:]}"
    assert "No issues found" in out.stdout, out.stdout[-2000:]

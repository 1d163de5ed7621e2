"""webnav over the AgentGym wire format: ``agentgym env serve webnav`` in a real subprocess,
played to success by the scripted solver through plain HTTP, and stopped without leaking
a browser."""
from __future__ import annotations

import os
import time

import httpx
import pytest

from agentgym_core.env.launcher import EnvLauncher
from agentgym_env_webnav.browser import BrowserNotFound, find_binaries, process_tree
from agentgym_env_webnav.solver import ScriptedSolver

try:
    find_binaries()
except BrowserNotFound as exc:  # CI installs Chromium through scripts/setup.sh: never skip there
    if os.environ.get("CI"):
        raise
    pytest.skip(f"needs Chromium: {exc}", allow_module_level=True)

pytestmark = pytest.mark.slow


def _browser_pids(server_pid: int) -> list[int]:
    pids = []
    for pid in process_tree(server_pid):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if "chrom" in os.path.basename(exe):
            pids.append(pid)
    return pids


def test_serve_play_to_success_and_stop_cleanly():
    options = {"tasks": ["login-user", "click-checkboxes"], "train_seeds": 5, "test_seeds": 2}
    with EnvLauncher("webnav", options=options, startup_timeout=60) as launcher:
        url = launcher.urls[0]
        with httpx.Client(base_url=url, timeout=60) as http:
            info = http.get("/info").json()
            assert info["tasks"] == options["tasks"] and info["splits"] == {"train": 10, "test": 4}
            sid = http.post("/create").json()["id"]
            wins = 0
            for data_idx in (0, 1):  # one episode of each task
                obs = http.post("/reset", json={"id": sid, "data_idx": data_idx}).json()["observation"]
                assert obs.startswith("Task: ")
                solver = ScriptedSolver()
                for seq in range(1, 12):
                    reply = http.post("/step", json={"id": sid, "action": solver.act(obs), "seq": seq}).json()
                    obs = reply["observation"]
                    if reply["done"]:
                        break
                assert reply["done"] and reply["reward"] > 0 and reply["info"]["success"], reply
                wins += 1
            assert wins == 2

            # the bad-action path over the wire: an answer that helps, not an error
            http.post("/reset", json={"id": sid, "data_idx": 0})
            reply = http.post("/step", json={"id": sid, "action": "click the login button", "seq": 99}).json()
            assert reply["info"]["invalid_action"] and not reply["done"]
            assert "needs an element id in brackets, e.g. click [12]" in reply["observation"] and "Page:" in reply["observation"]
            assert http.get("/observation", params={"id": sid}).json() == reply["observation"]

            server_pid = launcher.procs[0].pid
            browsers = _browser_pids(server_pid)
            assert browsers, "the session's browser should run under the server"
    deadline = time.monotonic() + 5
    while _alive(browsers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(browsers), f"browser processes outlived the server: {_alive(browsers)}"


def _alive(pids):
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except OSError:
            pass
    return alive

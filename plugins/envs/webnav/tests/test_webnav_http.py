"""webnav over the AgentGym wire format: ``agentgym env serve webnav`` in a real subprocess,
played to success by the scripted solver through plain HTTP, and stopped without leaking
a browser."""
from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from agentgym_core.env.launcher import EnvLauncher
from agentgym_core.testing import play_over_http
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
        for data_idx in (0, 1):  # one episode of each task, and the bad-action path: an answer that helps
            play = play_over_http(url, data_idx, ScriptedSolver().act, max_steps=11, invalid_action="click the login button",
                                  invalid_hint="needs an element id in brackets, e.g. click [12]")
            assert play.first_observation.startswith("Task: ") and "Page:" in play.invalid["observation"]
            assert play.last["reward"] > 0
        assert play.info["tasks"] == options["tasks"] and play.info["splits"] == {"train": 10, "test": 4}

        with httpx.Client(base_url=url, timeout=60) as http:  # a session still open when the server stops
            sid = http.post("/create").json()["id"]
            assert http.post("/reset", json={"id": sid, "data_idx": 0}).status_code == 200
        browsers = _browser_pids(launcher.procs[0].pid)
        assert browsers, "the session's browser should run under the server"
    deadline = time.monotonic() + 5
    while _alive(browsers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(browsers), f"browser processes outlived the server: {_alive(browsers)}"


def test_sigkilled_server_leaves_no_browser_behind():
    """SIGKILL gives the server no chance to quit its browsers: their guard must kill them."""
    with EnvLauncher("webnav", options={"tasks": ["click-test"]}, startup_timeout=60) as launcher:
        with httpx.Client(base_url=launcher.urls[0], timeout=60) as http:
            for _ in range(2):  # two sessions, two browsers
                sid = http.post("/create").json()["id"]
                assert http.post("/reset", json={"id": sid, "data_idx": 0}).status_code == 200
        server = launcher.procs[0]
        browsers = _browser_pids(server.pid)
        drivers = [p for p in browsers if _exe(p) == "chromedriver"]
        assert len(drivers) == 2 and len(browsers) > 2, browsers
        profiles = {arg.split("=", 1)[1] for p in browsers for arg in _cmdline(p) if arg.startswith("--user-data-dir=")}
        assert len(profiles) == 2 and all(os.path.isdir(d) for d in profiles), profiles
        os.kill(server.pid, signal.SIGKILL)  # the server only, not its process group
        server.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(browsers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(browsers), f"chromedriver/Chromium outlived the SIGKILLed server: {_alive(browsers)}"
        # ... and their throw-away profiles (2.5 MB each) do not stay behind in the temp folder
        while any(os.path.exists(d) for d in profiles) and time.monotonic() < deadline + 5:
            time.sleep(0.1)
        assert not [d for d in profiles if os.path.exists(d)], "the browser profiles outlived the SIGKILLed server"


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []


def _exe(pid):
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


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

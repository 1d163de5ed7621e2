"""``agentgym view`` as a real subprocess on a free loopback port; loopback-only access."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
from starlette.testclient import TestClient

from agentgym_core.cli.main import main
from agentgym_inspect.viewer.app import create_app
from agentgym_inspect.viewer.sample import write_sample_run


def test_view_command_serves_the_run(tmp_path):
    run = write_sample_run(tmp_path / "demo", steps=2, episodes_per_step=3)
    proc = subprocess.Popen([sys.executable, "-m", "agentgym_core.cli.main", "view", str(run), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"Viewing {run} at http://127.0.0.1:"), proc.stderr.read() if not line else line
        url = line.split(" at ", 1)[1].split()[0]
        body = httpx.get(url + "api/run", timeout=10).json()
        assert body["name"] == "demo" and len(body["files"]) == 2
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_view_rejects_what_is_not_a_run(tmp_path, capsys):
    assert main(["view", str(tmp_path)]) == 1
    assert "is not a run directory" in capsys.readouterr().err
    assert main(["view"]) == 2


def test_non_loopback_clients_are_refused(tmp_path):
    run = write_sample_run(tmp_path / "demo", steps=1, episodes_per_step=1)
    app = create_app(run)
    assert TestClient(app, client=("127.0.0.1", 5000)).get("/api/run").status_code == 200
    r = TestClient(app, client=("192.168.1.20", 5000)).get("/api/run")
    assert r.status_code == 403 and "loopback" in r.json()["error"]

"""Security of the env wire: loopback by default, bearer-token auth, body size limit, JSON only,
and the token kept out of process listings, server logs and run directories."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from agentgym_core.env.launcher import EnvLauncher

ECHO = "agentgym_robust_envs:EchoEnv"
SECRET = "s3cret-Token-4c9f"
ROOT = Path(__file__).resolve().parents[2]


def _non_loopback_ip() -> str | None:
    """An address of this machine other than 127.x (None if it has none)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent; picks the outgoing interface
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


@pytest.fixture(scope="module")
def token_server(tmp_path_factory):
    """``agentgym env serve`` with a token from the environment, its output captured to a file."""
    log = tmp_path_factory.mktemp("srv") / "server.log"
    env = dict(os.environ, AGENTGYM_ENV_TOKEN=SECRET, PYTHONUNBUFFERED="1")
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "agentgym_core.cli.main", "env", "serve", ECHO,
                                 "--max-body", "4096", "--log-level", "debug"],
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            match = re.search(r"listening on (http://\S+)", log.read_text())
            url = match.group(1) if match else None
            time.sleep(0.05)
        yield proc, url, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def test_binds_loopback_by_default(token_server):
    proc, url, _ = token_server
    assert url.startswith("http://127.0.0.1:")
    ip = _non_loopback_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback address to probe from")
    port = int(url.rsplit(":", 1)[1])
    with pytest.raises(OSError):
        socket.create_connection((ip, port), timeout=2).close()


def test_token_required_and_checked(token_server):
    _, url, _ = token_server
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200  # liveness needs no token
    assert httpx.get(f"{url}/openapi.json", timeout=5).status_code == 200
    for headers in ({}, {"authorization": "Bearer guess-7f3a"}, {"authorization": f"Basic {SECRET}"},
                    {"authorization": f"Bearer {SECRET}x"}):
        resp = httpx.post(f"{url}/create", json={}, headers=headers, timeout=5)
        assert resp.status_code == 401, headers
        assert resp.headers["www-authenticate"] == "Bearer"
        assert SECRET not in resp.text and "guess-7f3a" not in resp.text  # neither the real nor the sent token echoed
    good = {"authorization": f"Bearer {SECRET}"}
    sid = httpx.post(f"{url}/create", json={}, headers=good, timeout=5).json()["id"]
    assert httpx.post(f"{url}/close", json={"id": sid}, headers=good, timeout=5).json()["closed"] is True


def test_token_not_in_process_listing_or_server_log(token_server):
    proc, url, log = token_server
    httpx.post(f"{url}/create", json={}, headers={"authorization": f"Bearer {SECRET}"}, timeout=5)
    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes() if Path(f"/proc/{proc.pid}").exists() else b""
    assert SECRET.encode() not in cmdline
    assert SECRET not in log.read_text()


def test_launcher_passes_token_outside_the_command_line():
    with EnvLauncher(ECHO, token=SECRET) as launcher:
        assert SECRET not in " ".join(launcher.command())
        cmdline = Path(f"/proc/{launcher.procs[0].pid}/cmdline").read_bytes()
        assert SECRET.encode() not in cmdline
        url = launcher.urls[0]
        assert httpx.post(f"{url}/create", json={}, timeout=5).status_code == 401
        assert httpx.post(f"{url}/create", json={}, headers={"authorization": f"Bearer {SECRET}"}, timeout=5).status_code == 200


def test_body_size_limit(token_server):
    _, url, _ = token_server
    good = {"authorization": f"Bearer {SECRET}", "content-type": "application/json"}
    big = b'{"id": 0, "action": "' + b"x" * 10_000 + b'"}'
    resp = httpx.post(f"{url}/step", content=big, headers=good, timeout=5)
    assert resp.status_code == 413 and "4096" in resp.json()["error"]

    def chunks():  # no Content-Length: the limit must hold while streaming too
        for _ in range(10):
            yield b"x" * 1000

    resp = httpx.post(f"{url}/step", content=chunks(), headers=good, timeout=5)
    assert resp.status_code == 413
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200


def test_json_only_on_the_wire(token_server):
    """A pickle payload is just bytes that are not JSON: 400, never unpickled."""
    import pickle

    _, url, _ = token_server
    payload = pickle.dumps({"id": 0, "action": "inc"})
    resp = httpx.post(f"{url}/step", content=payload, timeout=5,
                      headers={"authorization": f"Bearer {SECRET}", "content-type": "application/octet-stream"})
    assert resp.status_code == 400 and "not valid JSON" in resp.json()["error"]
    wire = [ROOT / "agentgym_core" / "env", ROOT / "agentgym_core" / "rollout", ROOT / "plugins" / "umbrella" / "agentgym" / "agentgym"]
    files = [p for w in wire for p in ([w] if w.is_file() else w.rglob("*.py"))]
    assert files
    for path in files:
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(pickle|cPickle|dill|cloudpickle|marshal)\b", text, re.M), path


def test_token_not_written_to_run_config():
    from agentgym_core.config import load_config, to_yaml
    from agentgym_core.plugins import get_plugin_manager

    cfg = load_config([], ["env.name=babyai", f"env.token={SECRET}"], manager=get_plugin_manager())
    text = to_yaml(cfg)
    assert SECRET not in text and "<redacted>" in text
    # read back (as --resume does), the redacted token counts as unset: AGENTGYM_ENV_TOKEN supplies it
    again = load_config([], ["env.name=babyai", "env.token=<redacted>"], manager=get_plugin_manager())
    assert again.env.token is None

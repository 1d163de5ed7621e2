"""`agentgym env play` driven through stdin, and `agentgym env serve` used by a plain AgentGym-style client."""
from __future__ import annotations

import re
import subprocess
import sys

import httpx
import pytest

TOY = "agentgym_env_toys:CounterEnv"
AGENTGYM = [sys.executable, "-m", "agentgym_core.cli.main"]


def test_play_reads_actions_from_stdin_until_done():
    out = subprocess.run([*AGENTGYM, "env", "play", TOY, "--task-id", "1"], input="inc\nbogus\n\ninc\ninc\n",
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Reach the target number" in text and "value 0, target 2" in text
    assert "(invalid action)" in text
    assert "[reward 1  total 1  done True]" in text
    assert "Episode success after 3 steps" in text
    assert text.count("> ") == 4  # the last "inc" was never read: the episode had ended


def test_play_handles_end_of_input():
    out = subprocess.run([*AGENTGYM, "env", "play", TOY, "--task-id", "3"], input="inc\n", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "(end of input)" in out.stdout and "value 1" in out.stdout


def test_unknown_env_is_a_one_line_error():
    out = subprocess.run([*AGENTGYM, "env", "serve", "no_such_env_xyz"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.startswith("Error: unknown env 'no_such_env_xyz'") and "Traceback" not in out.stderr


@pytest.mark.slow
def test_serve_prints_its_url_and_answers_a_plain_agentgym_client():
    proc = subprocess.Popen([*AGENTGYM, "env", "serve", TOY, "--port", "0", "--max-sessions", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", line)
        assert match and int(match.group(2)) > 0, line + proc.stderr.read()
        base = match.group(1)
        # what an AgentGym EnvClient does, with nothing of ours
        env_id = httpx.post(f"{base}/create", timeout=10).json()["id"]
        reset = httpx.post(f"{base}/reset", json={"id": env_id, "data_idx": 0}, timeout=10).json()
        assert reset["observation"] == "value 0, target 1" and reset["done"] is False
        step = httpx.post(f"{base}/step", json={"id": env_id, "action": "inc"}, timeout=10).json()
        assert step["observation"] == "value 1" and step["reward"] == 1.0 and step["done"] is True
        assert httpx.get(f"{base}/observation?id={env_id}", timeout=10).json() == "value 1"
        assert httpx.post(f"{base}/close", json={"id": env_id}, timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert proc.returncode is not None


def _one_line_error(out: subprocess.CompletedProcess) -> str:
    assert out.returncode != 0, out.stdout
    assert "Traceback" not in out.stderr, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), out.stderr
    return lines[0]


def test_serve_and_play_check_options_like_the_run_config():
    for cmd in ("serve", "play"):
        out = subprocess.run([*AGENTGYM, "env", cmd, TOY, "--options", '{"strat": 1}'], input="",
                             capture_output=True, text=True, timeout=60)
        line = _one_line_error(out)
        assert "unknown option 'strat'" in line and "Did you mean 'start'?" in line, line
    out = subprocess.run([*AGENTGYM, "env", "play", TOY, "--options", '{"start": "zero"}'], input="",
                         capture_output=True, text=True, timeout=60)
    line = _one_line_error(out)
    assert "option 'start'" in line and "zero" in line, line


def test_serve_on_a_busy_port_is_a_one_line_error():
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run([*AGENTGYM, "env", "serve", TOY, "--port", str(port)],
                             capture_output=True, text=True, timeout=60)
    line = _one_line_error(out)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port 0" in line, line


def test_play_reports_an_env_exception_in_one_line_and_refuses_negative_ids():
    out = subprocess.run([*AGENTGYM, "env", "play", TOY, "--task-id", "1"], input="inc\nboom\n",
                         capture_output=True, text=True, timeout=60)
    line = _one_line_error(out)
    assert "env 'agentgym_env_toys:CounterEnv' raised in step('boom'): ValueError: the counter exploded" in line
    assert "value 1" in out.stdout  # the steps before it were played
    out = subprocess.run([*AGENTGYM, "env", "play", TOY, "--task-id", "-1"], input="",
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "-1 is not in the range x>=0" in out.stderr


def test_play_refuses_a_task_id_outside_every_split():
    """The counter's splits are train 0-99 and test 100-119: 5000 is no task of it."""
    out = subprocess.run([*AGENTGYM, "env", "play", TOY, "--task-id", "5000"], input="",
                         capture_output=True, text=True, timeout=60)
    line = _one_line_error(out)
    assert "task id 5000 is in no split of env 'agentgym_env_toys:CounterEnv'" in line, line
    assert "train: 0-99; test: 100-119" in line, line

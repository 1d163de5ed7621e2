"""Ctrl-C reaches the processes tests start, however the suite was launched.

Bisected with a hook recording SIGINT's disposition (Python's handler and the kernel's SigIgn
mask) after every test of the whole suite: no test changes it. A suite started as a background
job of a shell without job control (``bash -c 'pytest &'``, nohup, CI steps) starts with SIGINT
ignored, which every child inherits across exec; the repository's conftest.py restores it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def ignored_by_the_kernel() -> bool:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


def test_sigint_is_delivered_in_the_test_process():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not ignored_by_the_kernel()
    child = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                           capture_output=True, text=True, timeout=60)
    assert "default_int_handler" in child.stdout  # a child process gets Ctrl-C too


def test_a_suite_started_in_the_background_without_job_control_gets_sigint_back():
    probe = f"{sys.executable} -c 'import signal; print(signal.getsignal(signal.SIGINT))'"
    plain = subprocess.run(["bash", "-c", f"{probe} & wait $!"], capture_output=True, text=True, timeout=60)
    assert plain.stdout.strip() in ("1", "Handlers.SIG_IGN")  # SIG_IGN: what such a launch does to any process
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    node = f"{Path(__file__).relative_to(REPO)}::test_sigint_is_delivered_in_the_test_process"
    suite = subprocess.run(["bash", "-c", f"{sys.executable} -m pytest -q -p no:cacheprovider {node} & wait $!"],
                           capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert suite.returncode == 0, suite.stdout[-2000:] + suite.stderr[-2000:]
    assert "SIGINT was ignored when pytest started" in suite.stdout

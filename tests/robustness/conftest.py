"""Fixtures for the robustness tests: real env servers in subprocesses on loopback."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
_paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
if HERE not in _paths:  # server subprocesses import agentgym_robust_envs too
    os.environ["PYTHONPATH"] = os.pathsep.join([HERE, *[p for p in _paths if p]])

ECHO = "agentgym_robust_envs:EchoEnv"
STALL = "agentgym_robust_envs:StallEnv"


@pytest.fixture(scope="module")
def echo_server():
    """One launched ``agentgym env serve`` process for EchoEnv; yields the launcher."""
    from agentgym_core.env.launcher import EnvLauncher

    with EnvLauncher(ECHO, ttl=0) as launcher:
        yield launcher

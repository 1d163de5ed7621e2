"""Fixtures: ``kit`` (the helpers of ``judge_kit.py``: episodes, settings, the naive reading of a prompt)
and ``judge_server``, its scripted OpenAI-compatible judge on a loopback port."""
from pathlib import Path

import pytest

from agentgym_core.testing import load_script

KIT = load_script(Path(__file__).with_name("judge_kit.py"), "agentgym_reward_judge_test_kit")


@pytest.fixture(autouse=True)
def no_training_run(monkeypatch):
    """No run directory left behind by another test's training run (the on_run_start hook notes it)."""
    from agentgym_reward_judge import cache

    monkeypatch.setattr(cache, "current_run_dir", None)


@pytest.fixture
def kit():
    return KIT


@pytest.fixture
def judge_server():
    server = KIT.ScriptedJudge()
    yield server
    server.close()

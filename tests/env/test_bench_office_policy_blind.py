"""Every office task hinges on the written policy: the policy-blind agents of ``bench/service_loopholes.py`` (and
the ``plain`` worker they are built on, which does the work and never asks whether the policy allows it) win no
office task, in-process on every fourth test and OOD task; the bench runs them over HTTP on every task. Before the
office's task mix made each task need a rule, ``plain`` solved 49% of the test split."""
from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

import pytest

from agentgym_service.play import play

ROOT = Path(__file__).resolve().parents[2]
BLIND = ("plain", "refuse_first", "spread", "glue", "parrot", "vague_preauth", "impostor")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("service_loopholes", ROOT / "bench" / "service_loopholes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def env():
    from agentgym_env_office.env import OfficeEnv

    return OfficeEnv(reward="graded")


@pytest.mark.parametrize("split", ["test", "ood"])
@pytest.mark.parametrize("agent", BLIND)
def test_policy_blind_agents_win_no_office_task(bench, env, split, agent):
    runs = [play(env, t, bench.make_agent(agent, "office", t)) for t in env.splits()[split][::4]]
    assert [info["end_reason"] for _, info, _ in runs if info["success"]] == []
    assert statistics.mean(reward for reward, _, _ in runs) <= 0.05

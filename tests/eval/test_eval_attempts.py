"""Evaluation of strategies that try a task again: one row entry per task sample, success by attempt."""
from __future__ import annotations

import pytest

from agentgym_core.evaluation import attempt_chains, summarize, to_markdown
from agentgym_core.rollout.trajectory import Trajectory, Turn


def attempt(task_id, sample, n, success, *, as_dict=True, kinds=("action",)):
    first = f"s0-e{sample}-t{task_id}"
    t = Trajectory(
        episode_id=first if n == 1 else f"{first}-a{n}", env_name="t", task_id=task_id, group_id=sample,
        token_ids=[1, 2, 3], loss_mask=[0, 1, 1], logprobs=[0.0, -1.0, -1.0], prompt_len=1,
        turns=[Turn(start=1, end=3, text="x", action="x", kind=k) for k in kinds],
        end_reason="done", success=success, score=float(success), attempt=n, first_episode_id=first,
    )
    return t.to_dict() if as_dict else t


def chains_of(*outcomes, task_id=1, start=0):
    """One task sample per tuple of attempt outcomes, e.g. (False, True): solved at attempt 2."""
    out = []
    for sample, results in enumerate(outcomes, start):
        out += [attempt(task_id, sample, n, ok) for n, ok in enumerate(results, 1)]
    return out


def test_attempts_of_a_sample_form_one_chain():
    eps = chains_of((False, True), (True,), (False, False, False))
    assert [len(c) for c in attempt_chains(eps)] == [2, 1, 3]
    # trajectories without attempts (old dumps, the default strategy) are a chain each, ids or not
    plain = [{"episode_id": "e", "task_id": 1, "success": True}, {"episode_id": "e", "task_id": 1}]
    assert [len(c) for c in attempt_chains(plain)] == [1, 1]


def test_success_by_attempt_and_rows_by_last_attempt():
    eps = chains_of((False, True), (True,), (False, False, False), (False, False, True))
    s = summarize(eps, k=1, categories={1: "one"}, attempts=3)
    assert s["attempts"] == pytest.approx({"1": 0.25, "2": 0.5, "3": 0.75})
    o = s["overall"]
    assert (o["n"], o["tasks"]) == (4, 1) and o["success_rate"] == pytest.approx(0.75)
    assert o["attempts"] == s["attempts"] and s["categories"]["one"]["attempts"] == s["attempts"]
    table = to_markdown(s)
    assert "| by attempt 1 | by attempt 2 | by attempt 3 |" in table
    assert "| 25.0% | 50.0% | 75.0% |" in table


def test_attempts_reported_up_to_the_strategy_s_most_even_if_unused():
    s = summarize(chains_of((True,), (True,)), k=1, attempts=3)
    assert s["attempts"] == {"1": 1.0, "2": 1.0, "3": 1.0}


def test_one_attempt_summaries_are_unchanged():
    eps = chains_of((True,), (False,))
    s = summarize(eps, k=1, attempts=1)
    assert "attempts" not in s and "attempts" not in s["overall"]
    assert "by attempt" not in to_markdown(s)
    assert s == summarize(eps, k=1)


def test_plan_turns_are_not_counted_as_turns():
    eps = [attempt(1, 0, 1, True, kinds=("plan", "action", "action"))]
    assert summarize(eps, k=1)["overall"]["turns_mean"] == 2

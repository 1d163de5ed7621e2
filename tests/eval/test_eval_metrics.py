"""Evaluation metrics: unbiased Pass@k, Avg@k, per-category rows (empty ones too), tables."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_core.evaluation import (
    compare,
    eval_tasks,
    pass_at_k,
    pass_hat_k,
    summarize,
    to_markdown,
)
from agentgym_core.rollout.trajectory import Trajectory, Turn


def ep(task_id, success, *, turns=2, score=None, end_reason="done", failed=False, as_dict=True):
    t = Trajectory(
        episode_id=f"e{task_id}-{success}", env_name="t", task_id=task_id, group_id=task_id,
        token_ids=[1, 2, 3], loss_mask=[0, 1, 1], logprobs=[0.0, -1.0, -1.0], prompt_len=1,
        turns=[Turn(start=1, end=3, text="x", action="x") for _ in range(turns)],
        end_reason=end_reason, success=success, score=float(success) if score is None else score, failed=failed,
    )
    return t.to_dict() if as_dict else t


def brute_pass_at_k(n, c, k, agg=any):
    """Probability that a random k-subset of n samples (c good) holds a good one (agg=all: only good ones),
    by enumeration."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(agg(samples[i] for i in s) for s in subsets) / len(subsets)


@given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_matches_enumeration(args):
    n, c, k = args
    assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k))


def test_pass_at_k_edges():
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(2, 1, 4) == 1.0 and pass_at_k(2, 0, 4) == 0.0  # fewer samples than k
    with pytest.raises(ValueError):
        pass_at_k(0, 0, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


@given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_hat_k_matches_enumeration(args):
    n, c, k = args
    assert pass_hat_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k, agg=all))


def test_pass_hat_k_is_the_share_solved_in_every_trial():
    # 3 tasks x 4 trials: solved 4/4, 3/4, 0/4 -> pass^4 = 1/3; pass^1 is the success rate
    eps = [ep(t, ok) for t, wins in ((1, 4), (2, 3), (3, 0)) for ok in [True] * wins + [False] * (4 - wins)]
    assert summarize(eps, k=4)["overall"]["pass_hat_k"] == pytest.approx(1 / 3)
    assert summarize(eps, k=4)["overall"]["pass_at_k"] == pytest.approx(2 / 3)
    assert summarize(eps, k=1)["overall"]["pass_hat_k"] == pytest.approx(7 / 12)
    assert pass_hat_k(2, 2, 4) == 1.0 and pass_hat_k(2, 1, 4) == 0.0  # fewer trials than k: all of them
    assert "pass^4" in to_markdown(summarize(eps, k=4))
    with pytest.raises(ValueError):
        pass_hat_k(0, 0, 1)


def test_summarize_overall_and_categories_with_an_empty_one():
    eps = [ep(1, True), ep(1, False), ep(2, False, turns=4, end_reason="max_turns"), ep(2, False, turns=4, end_reason="max_turns")]
    cats = {1: "GoTo", 2: "Pickup", 3: "Unlock"}  # task 3 got no episode
    s = summarize(eps, k=2, categories=cats)
    o = s["overall"]
    assert (o["n"], o["tasks"]) == (4, 2)
    assert o["success_rate"] == pytest.approx(0.25)
    assert o["avg_at_k"] == pytest.approx(0.25)
    assert o["pass_at_k"] == pytest.approx(0.5)
    assert o["turns_mean"] == pytest.approx(3.0)
    assert o["end_reasons"] == {"done": 2, "max_turns": 2}
    assert list(s["categories"]) == ["GoTo", "Pickup", "Unlock"]
    assert s["categories"]["GoTo"]["pass_at_k"] == 1.0
    empty = s["categories"]["Unlock"]
    assert empty["n"] == 0 and empty["success_rate"] is None and empty["end_reasons"] == {}
    md = to_markdown(s)
    assert "| Unlock | 0 | 0 | – |" in md
    assert "Pass@2" in md and "| overall | 4 | 2 | 25.0% |" in md


def test_avg_at_k_weights_tasks_equally_and_accepts_objects():
    eps = [ep(1, True, as_dict=False)] + [ep(2, False, as_dict=False) for _ in range(3)]
    s = summarize(eps, k=1, categories=lambda tid: "odd" if tid % 2 else None)
    assert s["overall"]["success_rate"] == pytest.approx(0.25)
    assert s["overall"]["avg_at_k"] == pytest.approx(0.5)  # (1/1 + 0/3) / 2 tasks
    assert list(s["categories"]) == ["odd"] and s["categories"]["odd"]["n"] == 1


def test_empty_evaluation_does_not_crash():
    s = summarize([], k=4, categories={})
    assert s["overall"]["n"] == 0 and s["categories"] == {}
    assert "| overall | 0 | 0 | – |" in to_markdown(s)


def test_failed_episodes_are_counted():
    s = summarize([ep(1, False, failed=True, end_reason="env_error"), ep(1, True)], k=1)
    assert s["overall"]["failed"] == 1 and s["overall"]["end_reasons"]["env_error"] == 1


def test_compare_side_by_side_with_missing_categories():
    a = summarize([ep(1, True), ep(2, False)], k=1, categories={1: "A", 2: "B"})
    b = summarize([ep(1, True), ep(3, True)], k=1, categories={1: "A", 3: "C"})
    table = compare({"base": a, "trained": b})
    lines = table.splitlines()
    assert lines[0] == "| metric | base | trained |"
    assert "| success | 50.0% | 100.0% |" in table
    assert "| success: B | 0.0% (n=1) | – |" in table
    assert "| success: C | – | 100.0% (n=1) |" in table
    assert compare({}) == "(nothing to compare)"


def test_compare_says_what_each_column_evaluated():
    a = {**summarize([ep(1, True)], k=1), "meta": {"env": "lightsout", "max_turns": 3,
                                                   "model": "/r/runs/lo/checkpoints/step_000003"}}
    b = {**summarize([ep(1, False)], k=1), "meta": {"env": "mytoy", "max_turns": 2, "model": "smollm2-135m-instruct"}}
    table = compare({"after": a, "other": b})
    assert table.startswith("note: these columns evaluate different envs (lightsout, mytoy)")
    assert "| env | lightsout | mytoy |" in table and "| model | lo/step_000003 | smollm2-135m-instruct |" in table
    assert "| max turns | 3 | 2 |" in table
    assert not compare({"after": a, "again": a}).startswith("note:")


def test_eval_tasks_groups_samples_of_a_task():
    assert eval_tasks([7, 9], 2) == [(7, 0), (7, 0), (9, 1), (9, 1)]
    assert not math.isnan(pass_at_k(10, 3, 5))


def test_select_tasks_spreads_over_the_split():
    from agentgym_core.evaluation import select_tasks

    ids = list(range(100, 200))  # e.g. ten categories of ten consecutive tasks
    picked = select_tasks(ids, 10)
    assert picked == list(range(100, 200, 10)) and len({t // 10 for t in picked}) == 10
    assert select_tasks(ids, 0) == ids and select_tasks(ids, 500) == ids
    assert select_tasks(range(5), 2) == [0, 2]

"""Rollout behaviour: overlap of env waits with generation, determinism, budgets, failures, dumps."""
from __future__ import annotations

import json
import threading
import time

import pytest
from agentgym_engine_hf.engine import HFEngine

from agentgym_core import BaseEnv
from agentgym_core.engine import GenerationRequest, SamplingParams
from agentgym_core.assembly import local_parts
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.rollout.trajectory import Trajectory

INTERVALS: list[tuple[str, float, float]] = []
LOCK = threading.Lock()


class SleepyEnv(BaseEnv):
    """Each step sleeps ``SleepyEnv.delay`` seconds (a slow simulator or web call)."""

    instruction = "Reply with anything."
    action_format = "free"
    delay = 0.1

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return f"task {task_id}"

    def step(self, action):
        start = time.perf_counter()
        time.sleep(self.delay)
        with LOCK:
            INTERVALS.append(("env", start, time.perf_counter()))
        self.n += 1
        return f"obs {self.n}", 0.0, self.n >= 4, {}


class TimedEngine(HFEngine):
    """The real HF engine, recording when it generates."""

    def generate(self, requests):
        start = time.perf_counter()
        try:
            return super().generate(requests)
        finally:
            with LOCK:
                INTERVALS.append(("gen", start, time.perf_counter()))


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


@pytest.mark.slow
def test_env_waits_overlap_generation(smol_tokenizer, tiny_model):
    engine = TimedEngine(tiny_model, smol_tokenizer, max_batch_size=4)
    # Size the env delay like one generation batch, so lock-step would take gen + env.
    prompt = list(smol_tokenizer("task 0 and a few words", add_special_tokens=False)["input_ids"])
    start = time.perf_counter()
    engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=16, seed=i)) for i in range(4)])
    SleepyEnv.delay = max(0.05, time.perf_counter() - start)
    INTERVALS.clear()
    stats: dict = {}
    trajs = run_rollout(local_parts(engine, SleepyEnv, max_new_tokens=16, concurrency=8),
                        [(i, i) for i in range(8)], max_turns=4, seed=0, stats=stats)
    assert all(t.end_reason == "done" for t in trajs)
    gen = [(s, e) for k, s, e in INTERVALS if k == "gen"]
    env = _merge([(s, e) for k, s, e in INTERVALS if k == "env"])  # time when some env was stepping
    gen_total = sum(e - s for s, e in gen)
    env_total = sum(e - s for s, e in env)
    overlap = _overlap(env, gen)
    print(f"wall {stats['wall_seconds']:.2f}s, generation {gen_total:.2f}s, env {env_total:.2f}s, "
          f"overlap {overlap:.2f}s, sum {gen_total + env_total:.2f}s, max {max(gen_total, env_total):.2f}s, "
          f"batches {stats['batches']} (mean {stats['mean_batch']:.1f})")
    # Lock-step rollout has no overlap (wall = generation + env); here most env time hides behind generation.
    assert overlap > 0.4 * env_total, f"env steps overlapped generation only {overlap / env_total:.0%} of the time"
    assert stats["wall_seconds"] < gen_total + env_total


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def test_rollout_deterministic_under_seed(smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer)
    kwargs = dict(max_turns=3, seed=11)
    SleepyEnv.delay = 0.0

    def parts():
        return local_parts(engine, SleepyEnv, instruction="x", max_new_tokens=8)

    a = run_rollout(parts(), [(0, 0), (1, 1), (2, 2)], **kwargs)
    b = run_rollout(parts(), [(0, 0), (1, 1), (2, 2)], **kwargs)
    c = run_rollout(parts(), [(0, 0), (1, 1), (2, 2)], **{**kwargs, "seed": 12})
    assert [t.token_ids for t in a] == [t.token_ids for t in b]
    assert [t.token_ids for t in a] != [t.token_ids for t in c]


class ReactEnv(BaseEnv):
    instruction = "Act with 'Action: go'."
    action_format = "react"

    def reset(self, *, task_id=None, seed=None):
        return "You are in a room."

    def step(self, action):
        return "ok", 0.0, False, {}


def test_unparsable_reply_becomes_hint_and_budgets_end_episodes(smol_tokenizer, tiny_model, tmp_path):
    engine = HFEngine(tiny_model, smol_tokenizer)
    trajs = run_rollout(local_parts(engine, ReactEnv, max_new_tokens=6), [(0, 0)], max_turns=2, seed=0,
                        dump_path=tmp_path, step=7)
    traj = trajs[0]
    assert traj.end_reason == "max_turns" and traj.num_turns == 2
    first = traj.turns[0]
    assert first.action is None and first.parse_error == "no 'Action:' line found"
    assert "Action: <one action>" in first.observation
    assert "Invalid reply" in smol_tokenizer.decode(traj.token_ids)
    lines = (tmp_path / "step_000007.jsonl").read_text().splitlines()
    assert Trajectory.from_dict(json.loads(lines[0])).token_ids == traj.token_ids

    small = run_rollout(local_parts(engine, ReactEnv, max_new_tokens=6, max_episode_tokens=120), [(0, 0)],
                        max_turns=20, seed=0)[0]
    assert small.end_reason == "max_tokens" and len(small.token_ids) <= 120
    ctx = run_rollout(local_parts(engine, ReactEnv, max_new_tokens=6, max_context=100), [(0, 0)], max_turns=20,
                      seed=0)[0]
    assert ctx.end_reason == "context" and len(ctx.token_ids) <= 100


class BrokenEnv(ReactEnv):
    action_format = "free"

    def step(self, action):
        raise RuntimeError("simulator crashed")


def test_env_failure_marks_only_that_episode(smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer)
    trajs = run_rollout(local_parts(engine, BrokenEnv, instruction="x", max_new_tokens=4), [(0, 0), (1, 1)],
                        max_turns=3, seed=0)
    for traj in trajs:
        assert traj.failed and traj.end_reason == "env_error"
        assert "simulator crashed" in traj.error
        assert traj.num_turns == 1
    assert not engine.plain.cache, "episodes must release their KV cache"


class ExplodingEngine(HFEngine):
    def generate(self, requests):
        raise RuntimeError("device lost")


def test_engine_failure_propagates(smol_tokenizer, tiny_model):
    engine = ExplodingEngine(tiny_model, smol_tokenizer)
    with pytest.raises(RuntimeError, match="device lost"):
        run_rollout(local_parts(engine, ReactEnv, instruction="x", action_format="free"), [(0, 0), (1, 1)], max_turns=2)


def test_history_window_shortens_model_prompt(smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer)
    SleepyEnv.delay = 0.0
    full = run_rollout(local_parts(engine, SleepyEnv, instruction="x", max_new_tokens=6), [(0, 0)], max_turns=5,
                       seed=1)[0]
    windowed = run_rollout(local_parts(engine, SleepyEnv, instruction="x", max_new_tokens=6, history_window=1), [(0, 0)],
                           max_turns=5, seed=1)[0]
    assert windowed.num_turns == full.num_turns == 4
    # The trajectory still holds every turn; the model saw less context.
    assert windowed.turns[0].text == full.turns[0].text
    assert windowed.turns[-1].prompt_tokens < full.turns[-1].prompt_tokens
    assert windowed.turns[-1].prompt_tokens < windowed.turns[-1].start
    assert windowed.loss_mask.count(1) == sum(t.end - t.start for t in windowed.turns)

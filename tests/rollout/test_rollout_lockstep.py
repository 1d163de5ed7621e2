"""``rollout.lockstep``: batches stop depending on env timing, so seeded rollouts repeat exactly.

A real HF engine (tiny random model) plays an env whose steps take a random 0-40 ms. Without
lockstep the batcher sends whatever is queued when the engine is free, so the batches differ
from run to run; with it, every run sends the same batches and samples the same tokens and
log-probs, bit for bit, including when episodes end at different turns and queued episodes
take their slots.
"""
from __future__ import annotations

import random
import time

import pytest
from agentgym_engine_hf.engine import HFEngine

from agentgym_core import BaseEnv
from agentgym_core.assembly import local_parts
from agentgym_core.rollout.runner import run_rollout


class JitteryEnv(BaseEnv):
    """Task k ends after 2 + k % 3 steps; every step sleeps a random 0-40 ms."""

    instruction = "Reply with anything."
    action_format = "free"
    jitter = random.Random(0)

    def reset(self, *, task_id=None, seed=None):
        self.n, self.length = 0, 2 + int(task_id) % 3
        return f"task {task_id}"

    def step(self, action):
        time.sleep(JitteryEnv.jitter.uniform(0.0, 0.04))
        self.n += 1
        return f"obs {self.n}", 0.0, self.n >= self.length, {}


def play(engine, jitter_seed: int, lockstep: bool, episodes: int, concurrency: int):
    JitteryEnv.jitter = random.Random(jitter_seed)
    stats: dict = {}
    parts = local_parts(engine, JitteryEnv, max_new_tokens=6, concurrency=concurrency, temperature=1.0, top_p=0.9,
                        lockstep=lockstep)
    trajs = run_rollout(parts, [(i, i) for i in range(episodes)], max_turns=6, seed=3, stats=stats)
    assert all(t.end_reason == "done" for t in trajs), [t.end_reason for t in trajs]
    return trajs, stats


def test_without_lockstep_env_timing_changes_the_batches(smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer, max_batch_size=16)
    shapes = {(s["batches"], round(s["mean_batch"], 3)) for s in (play(engine, k, False, 8, 8)[1] for k in range(3))}
    # 8 episodes of 2-4 turns fit in 4 full batches; jitter splits them (the reason lockstep exists).
    assert all(batches > 4 for batches, _ in shapes), shapes


@pytest.mark.parametrize("episodes,concurrency", [(8, 8), (10, 4)])
def test_lockstep_repeats_batches_tokens_and_logprobs(smol_tokenizer, tiny_model, episodes, concurrency):
    engine = HFEngine(tiny_model, smol_tokenizer, max_batch_size=16)
    runs = [play(engine, k, True, episodes, concurrency) for k in range(3)]
    (first, stats), *others = runs
    for trajs, s in others:
        assert (s["batches"], s["mean_batch"]) == (stats["batches"], stats["mean_batch"])
        assert [t.token_ids for t in trajs] == [t.token_ids for t in first]
        assert [t.logprobs for t in trajs] == [t.logprobs for t in first]  # bit for bit
    if episodes == concurrency:
        # Every turn is one batch of every episode still playing: 8, then 5 (3 ended), then 2.
        assert stats["batches"] == 4 and stats["mean_batch"] == (8 + 8 + 5 + 2) / 4

"""``decode: static`` under core's rollout: multi-turn episodes decode what the plain path decodes,
turns reuse the episode's slot (no history prefilled twice), episodes share their common prefix,
lockstep repeats bit for bit, and without lockstep requests stream into the engine one by one."""
from __future__ import annotations

import random
import time

import pytest
from agentgym_engine_hf.engine import HFEngine

from agentgym_core import BaseEnv
from agentgym_core.assembly import local_parts
from agentgym_core.rollout.runner import run_rollout

LLAMA3 = ("{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] | trim }}"
          "<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")


class Rooms(BaseEnv):
    """Task k lasts 2 + k % 3 steps; steps may sleep a random 0-20 ms (``Rooms.jitter``)."""

    instruction = ("You walk through rooms. Reply with the name of a door to open. Every room has a red door, a "
                   "blue door and a green door; some doors are locked, and the last room has the exit. " * 2).strip()
    action_format = "free"
    jitter: random.Random | None = None

    def reset(self, *, task_id=None, seed=None):
        self.n, self.length = 0, 2 + int(task_id) % 3
        return f"Room 0 of task {task_id}."

    def step(self, action):
        if Rooms.jitter is not None:
            time.sleep(Rooms.jitter.uniform(0.0, 0.02))
        self.n += 1
        return f"Room {self.n}: doors red, blue, green.", 0.0, self.n >= self.length, {}


def play(engine, *, episodes=6, concurrency=4, lockstep=True, temperature=0.0, **settings):
    stats: dict = {}
    parts = local_parts(engine, Rooms, max_new_tokens=6, concurrency=concurrency, temperature=temperature,
                        top_p=0.9, lockstep=lockstep, **settings)
    trajs = run_rollout(parts, [(i, i) for i in range(episodes)], max_turns=5, seed=3, stats=stats)
    assert not any(t.failed for t in trajs), [t.error for t in trajs]
    return trajs, stats


@pytest.mark.parametrize("template", [None, LLAMA3], ids=["chatml", "llama3"])
def test_episodes_decode_as_on_the_plain_path_and_never_prefill_history_twice(template, hf_tokenizer, hf_tiny_model):
    plain, _ = play(HFEngine(hf_tiny_model, hf_tokenizer), chat_template=template)
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode="static")
    fast, _ = play(engine, chat_template=template)
    for a, b in zip(plain, fast):
        assert b.token_ids == a.token_ids and b.loss_mask == a.loss_mask
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
        # each turn prefills only its observation delta: at most the episode's tokens, less than plain
        assert b.prefill_tokens <= a.prefill_tokens and b.prefill_tokens < len(b.token_ids)
        for prev, turn in zip(b.turns, b.turns[1:]):
            assert turn.prefill_tokens == turn.start - prev.end  # the observation delta, never earlier turns
    assert engine.static.broken is None
    engine.close()


def test_episodes_share_the_instruction_prefix(hf_tokenizer, hf_tiny_model):
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode="static")
    trajs, _ = play(engine, instruction_position="system")
    first = [t.turns[0].prefill_tokens for t in trajs]
    prompt = trajs[0].turns[0].start  # every first prompt is the shared system text + a short observation
    assert first[0] == prompt and all(n < prompt / 3 for n in first[1:]), first
    engine.close()


@pytest.mark.slow
def test_lockstep_repeats_bit_for_bit(hf_tokenizer, hf_tiny_model):
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode="static", max_batch_size=4)
    runs = []
    for k in range(3):
        Rooms.jitter = random.Random(k)
        runs.append(play(engine, episodes=7, concurrency=3, temperature=1.0))
    Rooms.jitter = None
    (first, stats), *others = runs
    for trajs, s in others:
        assert [t.token_ids for t in trajs] == [t.token_ids for t in first]
        assert [t.logprobs for t in trajs] == [t.logprobs for t in first]
        assert (s["batches"], s["mean_batch"]) == (stats["batches"], stats["mean_batch"])
    engine.close()


def test_without_lockstep_requests_stream_in(hf_tokenizer, hf_tiny_model):
    Rooms.jitter = random.Random(5)
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode="static")
    try:
        trajs, stats = play(engine, episodes=6, concurrency=6, lockstep=False)
    finally:
        Rooms.jitter = None
    lockstep, _ = play(HFEngine(hf_tiny_model, hf_tokenizer), episodes=6, concurrency=6)
    assert [t.token_ids for t in trajs] == [t.token_ids for t in lockstep]  # greedy: timing changes nothing
    assert stats["batches"] == sum(t.num_turns for t in trajs)  # one submission per turn, no gathering
    assert stats["generate_seconds"] > 0 and stats["generate_cpu_seconds"] > 0
    engine.close()

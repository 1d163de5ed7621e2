"""The repeat guard (``eval.repeat_guard``, issue 38 item 5): greedy decoding that goes round a loop ("turn left" 366
times in BabyAI) understates a model, so in an evaluation a reply whose action the episode already took in answer to
the same message is sampled again, at ``eval.repeat_temperature``, at most ``repeat_guard`` times a reply.

The model is a real tiny random Llama (seed 7) whose greedy reply in a room that never changes is the same three
tokens every turn; the env is played in this process."""
from __future__ import annotations

import asyncio
import json

import pytest
from agentgym_engine_hf.engine import HFEngine

from agentgym_core import BaseEnv
from agentgym_core.assembly import local_parts
from agentgym_core.config_schema import EvalSection, RolloutSection
from agentgym_core.evaluation import evaluate, plan_evaluation
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.rollout.trajectory import Trajectory


class Room(BaseEnv):
    """Whatever the agent says, the room stays as it was: a greedy policy here repeats itself forever."""

    instruction = "Say a word."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        return "You are in a room."

    def step(self, action):
        return "You are in a room.", 0.0, False, {}

    def splits(self):
        return {"train": [0], "test": [1, 2]}


@pytest.fixture(scope="module")
def engine(hf_tokenizer):
    from agentgym_hf.loading import tiny_random_model

    # fp32 on every CPU: the greedy loop below must be the same where "auto" would be bf16 and where not
    return HFEngine(tiny_random_model(hf_tokenizer, seed=7), hf_tokenizer, dtype="fp32")


def play(engine, guard: int, **kw) -> Trajectory:
    parts = local_parts(engine, Room, max_new_tokens=3, history_window=1)
    return run_rollout(parts, [(0, 0)], max_turns=6, seed=0, temperature=0.0, repeat_guard=guard, **kw)[0]


def test_greedy_goes_round_the_loop_and_the_guard_samples_a_new_action_in_its_place(engine, tmp_path):
    plain = play(engine, 0)
    actions = [t.action for t in plain.turns]
    assert actions[0] and actions == [actions[0]] * 6  # the loop the guard is for
    assert all(t.resampled is None for t in plain.turns)

    guarded = play(engine, 3, dump_path=tmp_path)
    first, rest = guarded.turns[0], guarded.turns[1:]
    assert guarded.token_ids[:first.end] == plain.token_ids[:plain.turns[0].end]  # nothing to guard yet: greedy
    assert first.resampled is None
    seen = {first.action}
    for turn in rest:  # every later reply answers the same message: a repeat is sampled again, up to 3 times
        assert turn.resampled is not None and 1 <= turn.resampled <= 3
        assert turn.action not in seen or turn.resampled == 3, (turn.action, seen)
        seen.add(turn.action)
    assert len(seen) >= 4
    line = json.loads(next(tmp_path.glob("*.jsonl")).read_text().splitlines()[0])
    assert [t.get("resampled") for t in line["turns"]] == [t.resampled for t in guarded.turns]
    assert "resampled" not in json.loads(json.dumps(plain.to_dict()))["turns"][0]  # old files stay as they were

    assert play(engine, 3).token_ids == guarded.token_ids  # the guard's samples are seeded: a rerun is the same


def test_an_evaluation_with_the_guard_says_how_many_turns_it_sampled_again(engine):
    cfg = {**vars(EvalSection(tasks=2)), "repeat_guard": 2, "repeat_temperature": 0.7}
    plan = plan_evaluation(cfg, vars(RolloutSection()), 5)
    assert (plan.repeat_guard, plan.repeat_temperature, plan.temperature) == (2, 0.7, 0.0)
    parts = local_parts(engine, Room, name="room", max_new_tokens=3, history_window=1)
    summary, trajectories = asyncio.run(evaluate(parts, plan, model="tiny", label=None))
    meta = summary["meta"]
    assert (meta["repeat_guard"], meta["repeat_temperature"], meta["turns"]) == (2, 0.7, 10)
    assert meta["turns_resampled"] == sum(bool(t.resampled) for tr in trajectories for t in tr.turns) >= 4

    off, _ = asyncio.run(evaluate(parts, plan_evaluation(vars(EvalSection(tasks=2)), vars(RolloutSection()), 5),
                                  model="tiny", label=None))
    assert "repeat_guard" not in off["meta"] and "turns_resampled" not in off["meta"]


def test_a_negative_guard_is_refused_by_name():
    with pytest.raises(ValueError, match=r"eval.repeat_guard must be >= 0 \(0: off\), got -1"):
        EvalSection(repeat_guard=-1)
    with pytest.raises(ValueError, match="eval.repeat_temperature must be > 0"):
        EvalSection(repeat_temperature=0.0)


def test_the_table_says_what_the_guard_did():
    from agentgym_core.eval_tables import repeat_lines

    meta = {"repeat_guard": 4, "repeat_temperature": 1.0, "turns_resampled": 37, "turns": 412}
    assert repeat_lines({"meta": meta}) == [
        "Repeat guard: 37 of 412 replies repeated an action already taken in answer to the same message and were "
        "sampled again (eval.repeat_guard 4, at temperature 1.0)."]
    assert repeat_lines({"meta": {"tasks": 3}}) == []

"""``reflect`` (Reflexion): a failed attempt, a reflection, the next attempt with it in its prompt.

The acceptance test: a scripted engine fails attempt 1 (it opens the trap door), writes a
reflection, and attempt 2's prompt holds the reflection as context (loss mask 0); the
evaluation summary reports success by attempt. Also through ``agentgym eval`` with a real
(tiny, random) model, token-exact attempts, and the options.
"""
from __future__ import annotations

import asyncio
import json
import textwrap

import pytest
from agentgym_strategy_basic.reflect import OUTCOMES, ReflectConfig, ReflectStrategy

from agentgym_core import BaseEnv
from agentgym_core.assembly import local_parts
from agentgym_core.config import load_config
from agentgym_core.errors import ConfigError
from agentgym_core.evaluation import EvalPlan, evaluate
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.testing import ScriptedEngine

LESSON = "I opened the left door, which was a trap. Next time I will open the right door."


class DoorsEnv(BaseEnv):
    """Two doors: ``right`` escapes, ``left`` is a trap that ends the episode as a failure."""

    instruction = "Escape the room: reply 'left' or 'right'."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        return f"Room {task_id}: a left door and a right door."

    def step(self, action):
        if action == "right":
            return "You escaped.", 1.0, True, {"success": True}
        if action == "left":
            return "A trap! You failed.", 0.0, True, {"success": False}
        return "Nothing happens.", 0.0, False, {}

    def splits(self):
        return {"train": range(0, 10), "test": range(100, 104)}


def scripted_agent(prompt: str, _n: int) -> str:
    """Reflects when asked, opens the right door once a reflection says so, else the left one."""
    if ReflectConfig.prompt in prompt:
        return LESSON
    return "right" if LESSON in prompt else "left"


def test_failed_attempt_reflection_goes_into_the_next_prompt_and_eval_reports_attempts(smol_tokenizer):
    engine = ScriptedEngine(smol_tokenizer, scripted_agent)
    parts = local_parts(engine, DoorsEnv, name="doors", strategy=ReflectStrategy(attempts=3))
    plan = EvalPlan(split="test", k=1, tasks=2, temperature=0.0, max_turns=3)
    summary, trajs = asyncio.run(evaluate(parts, plan, model="scripted", label=None))

    assert [(t.task_id, t.attempt, t.success) for t in trajs] == [(100, 1, False), (100, 2, True),
                                                                  (102, 1, False), (102, 2, True)]
    first, second = trajs[:2]
    assert second.first_episode_id == first.episode_id and second.group_id == first.group_id
    assert second.memory == [LESSON] and first.memory == []
    # the reflection is in attempt 2's prompt tokens, as context: loss mask 0, never among trained tokens
    prompt = smol_tokenizer.decode(second.token_ids[: second.prompt_len])
    assert f"{ReflectConfig.header}\n- {LESSON}\n\nRoom 100: a left door and a right door." in prompt
    assert set(second.loss_mask[: second.prompt_len]) == {0}
    trained = [tok for tok, m in zip(second.token_ids, second.loss_mask) if m]
    assert LESSON not in smol_tokenizer.decode(trained)
    assert smol_tokenizer.decode(trained).strip().startswith("right")
    # the reflection was written in the failed episode's own conversation, after how it ended
    asked = [smol_tokenizer.decode(p) for p in engine.prompts if ReflectConfig.prompt in smol_tokenizer.decode(p)]
    assert len(asked) == 2
    assert asked[0].startswith(smol_tokenizer.decode(first.token_ids))
    assert f"A trap! You failed.\n\n{OUTCOMES['done']}\n\n{ReflectConfig.prompt}" in asked[0]

    assert summary["attempts"] == {"1": 0.0, "2": 1.0, "3": 1.0}
    assert summary["overall"]["success_rate"] == 1.0 and summary["overall"]["n"] == 2
    assert summary["meta"]["strategy"] == "reflect"
    assert json.loads(json.dumps(summary))["attempts"]["2"] == 1.0


def test_success_and_env_errors_end_the_attempts(smol_tokenizer):
    class BrokenDoors(DoorsEnv):
        def step(self, action):
            raise RuntimeError("the door jammed")

    engine = ScriptedEngine(smol_tokenizer, ["right"])
    trajs = run_rollout(local_parts(engine, DoorsEnv, strategy=ReflectStrategy()), [(0, 0)], max_turns=2)
    assert [(t.attempt, t.success) for t in trajs] == [(1, True)]
    trajs = run_rollout(local_parts(engine, BrokenDoors, strategy=ReflectStrategy()), [(0, 0)], max_turns=2)
    assert [(t.attempt, t.failed) for t in trajs] == [(1, True)]  # not the agent's failure: no reflection


def test_attempts_and_memory_limits(smol_tokenizer):
    count = iter(range(100))

    def agent(prompt, _n):
        return f"Lesson {next(count)}." if ReflectConfig.prompt in prompt else "left"

    engine = ScriptedEngine(smol_tokenizer, agent)
    trajs = run_rollout(local_parts(engine, DoorsEnv, strategy=ReflectStrategy(attempts=4, memory=2)), [(0, 0)],
                        max_turns=2)
    assert [t.attempt for t in trajs] == [1, 2, 3, 4] and not any(t.success for t in trajs)
    assert [t.memory for t in trajs] == [[], ["Lesson 0."], ["Lesson 0.", "Lesson 1."], ["Lesson 1.", "Lesson 2."]]
    assert [t.episode_id for t in trajs] == ["s0-e0-t0", "s0-e0-t0-a2", "s0-e0-t0-a3", "s0-e0-t0-a4"]


def test_reflection_prompt_fits_the_context(smol_tokenizer):
    """A long failed episode: the oldest exchanges are left out of the reflection prompt."""
    engine = ScriptedEngine(smol_tokenizer, lambda p, n: "short lesson" if ReflectConfig.prompt in p else
                            "wait " * 20)
    strategy = ReflectStrategy(attempts=2, max_tokens=16)
    parts = local_parts(engine, DoorsEnv, strategy=strategy, max_context=400, max_episode_tokens=400)
    trajs = run_rollout(parts, [(0, 0)], max_turns=30)
    assert trajs[0].end_reason in ("context", "max_tokens") and len(trajs[0].token_ids) > 350
    asked = [p for p in engine.prompts if ReflectConfig.prompt in smol_tokenizer.decode(p)]
    assert len(asked) == 1 and len(asked[0]) + 16 <= 400
    assert "Room 0" in smol_tokenizer.decode(asked[0])  # the task itself is kept
    assert trajs[1].memory == ["short lesson"]


def test_options_are_validated(manager):
    cfg = load_config(None, ["agent.strategy=reflect", "agent.strategy.attempts=2"], manager=manager)
    assert dict(cfg.agent.strategy) == {"name": "reflect", "attempts": 2, "prompt": ReflectConfig.prompt,
                                        "header": ReflectConfig.header, "max_tokens": 96, "memory": 3}
    with pytest.raises(ConfigError, match="unknown config key 'agent.strategy.attemps'. Did you mean 'attempts'"):
        load_config(None, ["agent.strategy.name=reflect", "agent.strategy.attemps=2"], manager=manager)
    with pytest.raises(ConfigError, match="agent.strategy.attempts must be >= 1, got 0"):
        load_config(None, ["agent.strategy.name=reflect", "agent.strategy.attempts=0"], manager=manager)
    with pytest.raises(ConfigError, match="agent.strategy.prompt must be non-empty"):
        load_config(None, ["agent.strategy.name=reflect", "agent.strategy.prompt=' '"], manager=manager)


# -- with a real (tiny, random) model ----------------------------------------------------------
class AlwaysFails(BaseEnv):
    instruction = "Say anything."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return f"Task {task_id}."

    def step(self, action):
        self.n += 1
        return f"Step {self.n}: no luck.", 0.0, self.n >= 2, {"success": False}


@pytest.mark.slow
def test_attempts_are_token_exact_with_a_real_model(smol_tokenizer, model_dir):
    import torch
    from agentgym_engine_hf.engine import HFEngine
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    engine = HFEngine(model, smol_tokenizer, max_batch_size=4)
    parts = local_parts(engine, AlwaysFails, strategy=ReflectStrategy(attempts=2, max_tokens=12), max_new_tokens=8,
                        temperature=1.0)
    trajs = run_rollout(parts, [(0, 0), (1, 1)], max_turns=3, seed=4)
    assert [(t.task_id, t.attempt) for t in trajs] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    for traj in trajs:
        ids = traj.token_ids
        spans = {i for turn in traj.turns for i in range(turn.start, turn.end)}
        assert {i for i, m in enumerate(traj.loss_mask) if m} == spans
        for turn in traj.turns:
            assert smol_tokenizer.decode(ids[turn.start: turn.end], skip_special_tokens=False) == turn.text
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
        for i in sorted(spans):
            assert abs(float(logp[i - 1, ids[i]]) - traj.logprobs[i]) < 1e-4
    second = trajs[1]
    assert len(second.memory) == 1 and second.memory[0]  # the random model's reflection, whatever it says
    first_message = f"{ReflectConfig.header}\n- {second.memory[0]}\n\nTask 0."
    assert first_message in smol_tokenizer.decode(second.token_ids[: second.prompt_len])


ENV_MODULE = '''
from agentgym_core import BaseEnv, hookimpl

RESETS = {}


class SecondChanceEnv(BaseEnv):
    """Every task fails the first time it is played and succeeds (on any action) after that."""

    instruction = "Reply with any word."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        RESETS[task_id] = RESETS.get(task_id, 0) + 1
        self.task = task_id
        return f"Task {task_id}: say something."

    def step(self, action):
        win = RESETS[self.task] >= 2
        return ("You win." if win else "You lose."), float(win), True, {"success": win}

    def splits(self):
        return {"train": range(0, 10), "test": range(100, 106)}


@hookimpl
def register_envs(registry):
    registry.add("second_chance_test", "second_chance_env:SecondChanceEnv")
'''


@pytest.mark.slow
def test_agentgym_eval_reports_success_by_attempt(model_dir, tmp_path, monkeypatch, capsys):
    from agentgym_core.cli.main import main
    from agentgym_core.plugins import get_plugin_manager

    (tmp_path / "second_chance_env.py").write_text(ENV_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import second_chance_env

    manager = get_plugin_manager()
    manager.register(second_chance_env, "second-chance-test")
    try:
        config = tmp_path / "run.yaml"
        config.write_text(textwrap.dedent(f"""\
            model: {{path: {model_dir}, dtype: fp32, max_context: 512}}
            env: {{name: second_chance_test}}
            engine: {{name: hf, threads: 1}}
            scheduler: {{name: fixed, turns: 2}}
            rollout: {{max_new_tokens: 6}}  # sampled: the random model's greedy replies are blank
            eval: {{tasks: 3, k: 1}}
            """))
        out = tmp_path / "eval.json"
        code = main(["eval", "-c", str(config), "--model", str(model_dir), "--local", "--strategy", "reflect",
                     "--temperature", "1.0", "agent.strategy.attempts=2", "agent.strategy.max_tokens=8", "--out", str(out)])
        printed = capsys.readouterr()
        assert code == 0, printed.err
    finally:
        manager.unregister("second-chance-test")
    summary = json.loads(out.read_text())
    assert summary["attempts"] == {"1": 0.0, "2": 1.0} and summary["overall"]["success_rate"] == 1.0
    assert summary["meta"]["strategy"] == "reflect"
    assert "by attempt 1 | by attempt 2" in printed.out and "strategy reflect" in printed.err
    episodes = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert [(e["task_id"], e["attempt"], e["success"]) for e in episodes] == [
        (100, 1, False), (100, 2, True), (102, 1, False), (102, 2, True), (104, 1, False), (104, 2, True)]
    assert all(e["memory"] for e in episodes if e["attempt"] == 2)

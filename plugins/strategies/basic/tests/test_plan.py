"""``plan``: the first reply is a plan, kept in the episode (trained), in the history window, revisable."""
from __future__ import annotations

import pytest
from agentgym_strategy_basic.plan import PlanConfig, PlanStrategy

from agentgym_core import BaseEnv
from agentgym_core.assembly import local_parts
from agentgym_core.config import load_config
from agentgym_core.errors import ConfigError
from agentgym_core.rollout.chat import ChatFormat
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.testing import ScriptedEngine

SENT: list[str] = []
PLAN = "1. Walk twice. 2. Say win."


class WalkEnv(BaseEnv):
    """``win`` after at least ``need`` other actions succeeds; every action is recorded in SENT."""

    instruction = "Walk, then say win."
    action_format = "free"
    need = 2

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return f"Task {task_id}: a long road."

    def step(self, action):
        SENT.append(action)
        self.n += 1
        if action == "win":
            ok = self.n > self.need
            return ("You won." if ok else "Too early."), float(ok), True, {"success": ok}
        return f"You walked {self.n} times.", 0.0, False, {}


def expected_text(chat: ChatFormat, traj, first: str, user_after: list[str]) -> str:
    """The template's render of the episode's messages (each reply as sampled), ending on the last reply."""
    messages = chat.start(WalkEnv.instruction, first)[0]
    for turn, user in zip(traj.turns[:-1], user_after):
        content = chat.split_reply(traj.token_ids[turn.start: turn.end])[0]
        messages += [{"role": "assistant", "content": content}, {"role": "user", "content": user}]
    last = traj.turns[-1]
    return chat.render(messages, add_generation_prompt=True) + chat.decode(traj.token_ids[last.start: last.end])


def test_the_plan_comes_first_stays_in_the_episode_and_is_not_sent(smol_tokenizer):
    SENT.clear()
    engine = ScriptedEngine(smol_tokenizer, [PLAN, "walk", "walk", "win"])
    traj = run_rollout(local_parts(engine, WalkEnv, strategy=PlanStrategy()), [(7, 0)], max_turns=5, seed=0)[0]
    assert traj.success and SENT == ["walk", "walk", "win"]
    plan, *acts = traj.turns
    assert (plan.kind, plan.action, plan.observation) == ("plan", None, PlanConfig.act_prompt)
    assert [t.kind for t in acts] == ["action"] * 3 and plan.text.startswith(PLAN)
    # generated, so trained: the loss mask is 1 exactly on every reply, the plan's included
    assert {i for i, m in enumerate(traj.loss_mask) if m} == {i for t in traj.turns for i in range(t.start, t.end)}
    chat = ChatFormat(smol_tokenizer)
    first = f"Task 7: a long road.\n\n{PlanConfig.prompt}"
    users = [PlanConfig.act_prompt, "You walked 1 times.", "You walked 2 times."]
    assert smol_tokenizer.decode(traj.token_ids) == expected_text(chat, traj, first, users)
    # every action's prompt held the plan
    assert all(PLAN in smol_tokenizer.decode(p) for p in engine.prompts[1:])


def test_the_plan_stays_in_a_history_window(smol_tokenizer, monkeypatch):
    monkeypatch.setattr(WalkEnv, "need", 4)
    engine = ScriptedEngine(smol_tokenizer, [PLAN, "walk", "walk", "walk", "walk", "win"])
    parts = local_parts(engine, WalkEnv, strategy=PlanStrategy(), history_window=1)
    traj = run_rollout(parts, [(0, 0)], max_turns=6, seed=0)[0]
    assert traj.success
    ids, (plan, *acts) = traj.token_ids, traj.turns
    pinned = ids[plan.start: acts[0].start]  # the plan and the user's answer to it
    for k in range(2, 6):  # window 1: the initial prompt, the plan turn, the latest turn
        assert engine.prompts[k] == ids[: traj.prompt_len] + pinned + ids[acts[k - 2].start: acts[k - 1].start]
        assert PLAN in smol_tokenizer.decode(engine.prompts[k])
        assert "You walked 1 times." not in smol_tokenizer.decode(engine.prompts[k]) or k == 2


def test_the_plan_is_revised_and_the_revision_is_kept(smol_tokenizer, monkeypatch):
    monkeypatch.setattr(WalkEnv, "need", 4)

    def agent(prompt, n):
        if prompt.endswith(f"{PlanConfig.revise_prompt}<|im_end|>\n<|im_start|>assistant\n"):
            return f"Revised plan {n}: keep walking."
        return PLAN if n == 1 else ("win" if "You walked 4 times." in prompt else "walk")

    engine = ScriptedEngine(smol_tokenizer, agent)
    parts = local_parts(engine, WalkEnv, strategy=PlanStrategy(revise_every=2), history_window=1)
    traj = run_rollout(parts, [(0, 0)], max_turns=8, seed=0)[0]
    assert traj.success
    assert [t.kind for t in traj.turns] == ["plan", "action", "action", "plan", "action", "action", "plan", "action"]
    assert [t.action for t in traj.turns if t.kind == "action"] == ["walk", "walk", "walk", "walk", "win"]
    revised = traj.turns[6]
    assert revised.text.startswith("Revised plan")
    last_prompt = smol_tokenizer.decode(engine.prompts[-1])
    assert revised.text.split("<|im_end|>")[0] in last_prompt  # the latest plan is the one kept
    assert PLAN not in last_prompt and "Revised plan 4" not in last_prompt
    text = smol_tokenizer.decode(traj.token_ids)
    assert text.count(PlanConfig.revise_prompt) == 2 and "You walked 2 times.\n\n" + PlanConfig.revise_prompt in text


def test_options_are_validated(manager):
    cfg = load_config(None, ["agent.strategy=plan", "agent.strategy.revise_every=3"], manager=manager)
    assert cfg.agent.strategy.name == "plan" and cfg.agent.strategy.revise_every == 3
    with pytest.raises(ConfigError, match="unknown config key 'agent.strategy.revise'. Did you mean"):
        load_config(None, ["agent.strategy.name=plan", "agent.strategy.revise=true"], manager=manager)
    with pytest.raises(ConfigError, match="agent.strategy.max_tokens must be >= 1"):
        load_config(None, ["agent.strategy.name=plan", "agent.strategy.max_tokens=0"], manager=manager)


@pytest.mark.slow
def test_plan_episodes_are_token_exact_with_a_real_model(smol_tokenizer, model_dir):
    import torch
    from agentgym_engine_hf.engine import HFEngine
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    engine = HFEngine(model, smol_tokenizer, max_batch_size=4)
    parts = local_parts(engine, WalkEnv, strategy=PlanStrategy(max_tokens=12), max_new_tokens=6, temperature=1.0)
    trajs = run_rollout(parts, [(0, 0), (1, 1)], max_turns=3, seed=2)
    chat = ChatFormat(smol_tokenizer)
    for traj in trajs:
        ids = traj.token_ids
        assert traj.turns[0].kind == "plan" and len(traj.turns) == 4
        spans = {i for t in traj.turns for i in range(t.start, t.end)}
        assert {i for i, m in enumerate(traj.loss_mask) if m} == spans
        assert traj.end_reason == "max_turns"  # it ends on the last observation and the generation prompt
        messages = chat.start(WalkEnv.instruction, f"Task {traj.task_id}: a long road.\n\n{PlanConfig.prompt}")[0]
        for turn in traj.turns:
            content = chat.split_reply(ids[turn.start: turn.end])[0]
            messages += [{"role": "assistant", "content": content}, {"role": "user", "content": turn.observation}]
        assert smol_tokenizer.decode(ids) == chat.render(messages, add_generation_prompt=True)
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([traj.token_ids])).logits[0].float(), dim=-1)
        for i in sorted(spans):
            assert abs(float(logp[i - 1, traj.token_ids[i]]) - traj.logprobs[i]) < 1e-4

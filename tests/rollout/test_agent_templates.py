"""Episodes are token-exact under several chat templates (acceptance of issue 5).

For each trajectory: the masked-in tokens decode to exactly the sampled text, the whole
sequence is what the template renders for the same messages (replies as sampled), and the
logprobs match a separate forward pass of the model over the full sequence.
"""
from __future__ import annotations

import logging

import pytest
import torch
from agentgym_engine_hf.engine import HFEngine

from agentgym_core import BaseEnv
from agentgym_core.env.pool import LocalEnvPool
from agentgym_core.rollout.chat import ChatFormat, sentinel
from agentgym_core.rollout.runner import run_rollout

CHATML = None  # the SmolLM2 tokenizer's own template

LLAMA3 = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)

QWEN25 = (
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) or (message.role == 'assistant') %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

#: Not prefix-stable: the system line counts the messages, so every render changes the start.
UNSTABLE = (
    "{{ '<|im_start|>system\\n' + messages[0]['content'] + ' [' + (messages|length|string) + ']<|im_end|>\\n' }}"
    "{% for message in messages[1:] %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

TEMPLATES = {"chatml": CHATML, "llama3": LLAMA3, "qwen25": QWEN25}



class CountEnv(BaseEnv):
    """Ends after three accepted actions; replies with a multi-line observation."""

    instruction = "Reply with anything; every reply counts as an action."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return f"Task {task_id}.\nWhat do you do?"

    def step(self, action):
        self.n += 1
        done = self.n >= 3
        return f"Step {self.n} done.\n  Keep going.", float(done), done, {"success": done}


def expected_text(chat: ChatFormat, traj, contents: list[str], system: str) -> str:
    """The template's render of the episode's messages, each reply exactly as sampled."""
    skeleton = [{"role": "system", "content": system}, {"role": "user", "content": first_obs(traj)}]
    committed = traj.turns[:-1]
    for i, turn in enumerate(committed):
        skeleton += [{"role": "assistant", "content": sentinel(i)}, {"role": "user", "content": turn.observation}]
    text = chat.render(skeleton, add_generation_prompt=True)
    for i in range(len(committed)):
        text = text.replace(sentinel(i), contents[i], 1)
    return text + contents[-1] + chat.eot_text


def first_obs(traj) -> str:
    return f"Task {traj.task_id}.\nWhat do you do?"


def check_trajectory(traj, tokenizer, model, chat: ChatFormat) -> None:
    ids = traj.token_ids
    assert len(ids) == len(traj.loss_mask) == len(traj.logprobs)
    spans = set()
    contents = []
    for turn in traj.turns:
        assert traj.loss_mask[turn.start : turn.end] == [1] * (turn.end - turn.start)
        assert tokenizer.decode(ids[turn.start : turn.end], skip_special_tokens=False) == turn.text
        spans.update(range(turn.start, turn.end))
        contents.append(chat.split_reply(ids[turn.start : turn.end])[0])
    assert {i for i, m in enumerate(traj.loss_mask) if m} == spans, "loss mask must be 1 exactly on sampled tokens"
    assert not traj.template_fallback
    decoded = tokenizer.decode(ids, skip_special_tokens=False)
    assert decoded == expected_text(chat, traj, contents, CountEnv.instruction)
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
    for i in sorted(spans):
        assert abs(float(logp[i - 1, ids[i]]) - traj.logprobs[i]) < 1e-4, f"logprob mismatch at token {i}"


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_episode_tokens_exact_under_template(template, smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer, max_batch_size=3)
    chat = ChatFormat(smol_tokenizer, TEMPLATES[template])
    trajs = run_rollout(
        engine, LocalEnvPool(CountEnv, name="count"), [(t, t) for t in range(4)],
        max_turns=5, instruction=CountEnv.instruction, action_format="free",
        rollout_cfg={"max_new_tokens": 12, "temperature": 1.0}, seed=3, chat_template=TEMPLATES[template],
    )
    assert [t.end_reason for t in trajs] == ["done"] * 4
    for traj in trajs:
        assert traj.num_turns == 3 and traj.success
        check_trajectory(traj, smol_tokenizer, tiny_model, chat)
    if template != "llama3":  # templates that keep replies verbatim: the plain render matches too
        traj = trajs[0]
        messages = [{"role": "system", "content": CountEnv.instruction}, {"role": "user", "content": first_obs(traj)}]
        for turn in traj.turns[:-1]:
            content = chat.split_reply(traj.token_ids[turn.start : turn.end])[0]
            messages += [{"role": "assistant", "content": content}, {"role": "user", "content": turn.observation}]
        head = chat.render(messages, add_generation_prompt=True)
        assert smol_tokenizer.decode(traj.token_ids, skip_special_tokens=False).startswith(head)


def test_cache_reuse_keeps_prefill_near_unique_tokens(smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer)
    trajs = run_rollout(
        engine, LocalEnvPool(CountEnv), [(0, 0), (1, 1)], max_turns=5, instruction=CountEnv.instruction,
        action_format="free", rollout_cfg={"max_new_tokens": 12}, seed=0,
    )
    for traj in trajs:
        assert traj.prefill_tokens <= 1.2 * len(traj.token_ids)
        assert traj.prefill_tokens < len(traj.token_ids)  # later turns did not re-run the prompt


def test_unstable_template_falls_back_loudly(smol_tokenizer, tiny_model, caplog):
    engine = HFEngine(tiny_model, smol_tokenizer)
    with caplog.at_level(logging.WARNING, logger="agentgym.rollout"):
        trajs = run_rollout(
            engine, LocalEnvPool(CountEnv), [(0, 0)], max_turns=3, instruction=CountEnv.instruction,
            action_format="free", rollout_cfg={"max_new_tokens": 6}, seed=0, chat_template=UNSTABLE,
        )
    traj = trajs[0]
    assert traj.template_fallback
    assert "not prefix-stable" in caplog.text
    # Still token-exact on the sampled spans, and the observation turns are rendered.
    for turn in traj.turns:
        assert smol_tokenizer.decode(traj.token_ids[turn.start : turn.end], skip_special_tokens=False) == turn.text
    assert "Step 1 done." in smol_tokenizer.decode(traj.token_ids)

"""Episodes are token-exact under several chat templates (acceptance of issue 5).

For each trajectory: the masked-in tokens decode to exactly the sampled text, the whole
sequence is what the template renders for the same messages (replies as sampled), and the
logprobs match a separate forward pass of the model over the full sequence. The templates are
minimal Jinja strings reproducing one behaviour each: Llama 3 (trims content), Qwen2.5
(default system), Gemma (no system role), Mistral (``[INST]``, strict alternation, system in the
first or the last user turn), Qwen3 and DeepSeek-R1 (drop ``<think>`` from history; R1 opens
the generation prompt with ``<think>``).
"""
from __future__ import annotations

import logging

import pytest
import torch
from agentgym_engine_hf.engine import HFEngine

from agentgym_core import BaseEnv
from agentgym_core.assembly import local_parts
from agentgym_core.rollout.chat import ChatFormat, ChatTemplateError, sentinel
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.testing import ScriptedEngine

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

#: Gemma: no system role, ``model`` for the assistant, strict alternation, content trimmed.
GEMMA = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)

#: Mistral: system folded into the first user turn (``loop.first``; v0.3 uses ``loop.last``),
#: strict alternation, a space before each reply in history but none in the generation prompt.
MISTRAL = (
    "{% if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}"
    "{% set loop_messages = messages[1:] %}{% else %}{% set loop_messages = messages %}{% endif %}{{ bos_token }}"
    "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{% if loop.first and system is defined %}"
    "{{ '[INST] ' + system + '\\n\\n' + message['content'] + '[/INST]' }}"
    "{% else %}{{ '[INST] ' + message['content'] + '[/INST]' }}{% endif %}"
    "{% else %}{{ ' ' + message['content'] + eos_token }}{% endif %}{% endfor %}"
)
MISTRAL_LAST = MISTRAL.replace("loop.first and system", "loop.last and system")

#: Qwen3-style: earlier assistant turns are rendered without their ``<think>...</think>``.
QWEN3 = (
    "{% for message in messages %}{% set content = message['content'] %}"
    "{% if message['role'] == 'assistant' and not loop.last and '</think>' in content %}"
    "{% set content = content.split('</think>')[-1].lstrip('\\n') %}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

#: DeepSeek-R1-style: history drops the thinking, the generation prompt opens it.
R1 = (
    "{{ bos_token }}{% for message in messages %}{% set content = message['content'] %}"
    "{% if message['role'] == 'system' %}{{ content }}{% elif message['role'] == 'user' %}{{ '<|User|>' + content }}"
    "{% else %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}"
    "{{ '<|Assistant|>' + content + eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|Assistant|><think>\\n' }}{% endif %}"
)

TEMPLATES = {"chatml": CHATML, "llama3": LLAMA3, "qwen25": QWEN25, "gemma": GEMMA, "mistral": MISTRAL,
             "mistral_last": MISTRAL_LAST, "qwen3": QWEN3, "r1": R1}
#: Templates that render replies verbatim with no lead-in: the plain render of the messages matches too.
VERBATIM = {"chatml", "qwen25", "qwen3"}


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


def expected_text(chat: ChatFormat, traj, replies: list[str], system: str, first: str | None = None) -> str:
    """The template's render of the episode's messages, each reply exactly as sampled.

    A reply stands where the generation prompt put it: after the prompt's opening of the
    assistant turn (R1's ``<think>``), not the history's (Mistral's space).
    """
    skeleton = chat.start(system, first or first_obs(traj))[0]
    committed = traj.turns[:-1]
    for i, turn in enumerate(committed):
        skeleton += [{"role": "assistant", "content": sentinel(i)}, {"role": "user", "content": turn.observation}]
    text = chat.render(skeleton, add_generation_prompt=True)
    for i in range(len(committed)):
        old = chat.history_lead + sentinel(i)
        assert old in text
        text = text.replace(old, chat.prompt_lead + replies[i], 1)
    return text + replies[-1] + chat.eot_text


def reply_text(chat: ChatFormat, text: str) -> str:
    """A sampled reply without the end-of-turn marker the model produced."""
    return text[: -len(chat.eot_text)] if chat.eot_text and text.endswith(chat.eot_text) else text


def first_obs(traj) -> str:
    return f"Task {traj.task_id}.\nWhat do you do?"


def check_trajectory(traj, tokenizer, model, chat: ChatFormat, system: str = CountEnv.instruction,
                     first: str | None = None) -> None:
    ids = traj.token_ids
    assert len(ids) == len(traj.loss_mask) == len(traj.logprobs)
    spans = set()
    replies = []
    for turn in traj.turns:
        assert traj.loss_mask[turn.start : turn.end] == [1] * (turn.end - turn.start)
        assert tokenizer.decode(ids[turn.start : turn.end], skip_special_tokens=False) == turn.text
        spans.update(range(turn.start, turn.end))
        replies.append(reply_text(chat, turn.text))
    assert {i for i, m in enumerate(traj.loss_mask) if m} == spans, "loss mask must be 1 exactly on sampled tokens"
    assert not traj.template_fallback
    decoded = tokenizer.decode(ids, skip_special_tokens=False)
    assert decoded == expected_text(chat, traj, replies, system, first)
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
    for i in sorted(spans):
        assert abs(float(logp[i - 1, ids[i]]) - traj.logprobs[i]) < 1e-4, f"logprob mismatch at token {i}"


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_episode_tokens_exact_under_template(template, smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer, max_batch_size=3)
    chat = ChatFormat(smol_tokenizer, TEMPLATES[template])
    trajs = run_rollout(
        local_parts(engine, CountEnv, name="count", max_new_tokens=12, temperature=1.0, chat_template=TEMPLATES[template]),
        [(t, t) for t in range(4)], max_turns=5, seed=3,
    )
    assert [t.end_reason for t in trajs] == ["done"] * 4
    for traj in trajs:
        assert traj.num_turns == 3 and traj.success
        check_trajectory(traj, smol_tokenizer, tiny_model, chat)
    if template in VERBATIM:  # templates that keep replies verbatim: the plain render matches too
        traj = trajs[0]
        messages = chat.start(CountEnv.instruction, first_obs(traj))[0]
        for turn in traj.turns[:-1]:
            content = chat.split_reply(traj.token_ids[turn.start : turn.end])[0]
            messages += [{"role": "assistant", "content": content}, {"role": "user", "content": turn.observation}]
        head = chat.render(messages, add_generation_prompt=True)
        assert smol_tokenizer.decode(traj.token_ids, skip_special_tokens=False).startswith(head)


def test_cache_reuse_keeps_prefill_near_unique_tokens(smol_tokenizer, tiny_model):
    engine = HFEngine(tiny_model, smol_tokenizer)
    trajs = run_rollout(local_parts(engine, CountEnv, max_new_tokens=12), [(0, 0), (1, 1)], max_turns=5, seed=0)
    for traj in trajs:
        assert traj.prefill_tokens <= 1.2 * len(traj.token_ids)
        assert traj.prefill_tokens < len(traj.token_ids)  # later turns did not re-run the prompt


def test_unstable_template_falls_back_loudly(smol_tokenizer, tiny_model, caplog):
    engine = HFEngine(tiny_model, smol_tokenizer)
    with caplog.at_level(logging.WARNING, logger="agentgym.rollout"):
        trajs = run_rollout(local_parts(engine, CountEnv, max_new_tokens=6, chat_template=UNSTABLE), [(0, 0)],
                            max_turns=3, seed=0)
    traj = trajs[0]
    assert traj.template_fallback
    assert "not prefix-stable" in caplog.text
    assert ("(at character 74: was 'unts as an action. [2]<|im_end|>\\n<|im_start|>user\\n', "
            "now 'unts as an action. [4]<|im_end|>\\n<|im_start|>user\\n')") in caplog.text  # says where
    # Still token-exact on the sampled spans, and the observation turns are rendered.
    for turn in traj.turns:
        assert smol_tokenizer.decode(traj.token_ids[turn.start : turn.end], skip_special_tokens=False) == turn.text
    text = smol_tokenizer.decode(traj.token_ids)
    assert "<|im_end|>\n<|im_start|>user\nStep 1 done.\n  Keep going.<|im_end|>\n<|im_start|>assistant\n" in text


def rollout_once(tokenizer, model, template, *, agent_cfg=None):
    parts = local_parts(HFEngine(model, tokenizer), CountEnv, max_new_tokens=6, chat_template=template,
                        **(agent_cfg or {}))
    traj = run_rollout(parts, [(0, 0)], max_turns=5, seed=0)[0]
    assert traj.end_reason == "done"
    return traj


def test_gemma_gets_the_system_text_in_the_first_user_message(smol_tokenizer, tiny_model, caplog):
    template = GEMMA + "{# a copy of its own: the notice is logged once per template and process #}"
    with pytest.raises(ChatTemplateError, match="raised TemplateError\\('System role not supported'\\)"):
        ChatFormat(smol_tokenizer, template).render([{"role": "system", "content": "s"}], add_generation_prompt=True)
    with caplog.at_level(logging.WARNING, logger="agentgym.rollout"):
        trajs = [rollout_once(smol_tokenizer, tiny_model, template) for _ in range(2)]
    notices = [r.getMessage() for r in caplog.records if "first user message" in r.getMessage()]
    assert notices == [
        "the system text (agent.system_prompt, and the env's instruction unless agent.instruction_position puts it "
        "elsewhere) goes at the start of the first user message, because the chat template raised "
        "TemplateError('System role not supported') for a system message."
    ]
    text = smol_tokenizer.decode(trajs[0].token_ids)
    assert text.startswith(f"<|im_start|><start_of_turn>user\n{CountEnv.instruction}\n\nTask 0.\nWhat do you do?"
                           "<end_of_turn>\n<start_of_turn>model\n")
    assert not trajs[0].template_fallback


def test_gemma_instruction_position_and_system_prompt(smol_tokenizer, tiny_model):
    agent = {"system_prompt": "Be brief.", "instruction_position": "after_observation"}
    traj = rollout_once(smol_tokenizer, tiny_model, GEMMA, agent_cfg=agent)
    text = smol_tokenizer.decode(traj.token_ids)
    assert text.startswith(f"<|im_start|><start_of_turn>user\nBe brief.\n\nTask 0.\nWhat do you do?\n\n"
                           f"{CountEnv.instruction}<end_of_turn>\n<start_of_turn>model\n")
    chat = ChatFormat(smol_tokenizer, GEMMA)
    check_trajectory(traj, smol_tokenizer, tiny_model, chat, system="Be brief.",
                     first=f"{first_obs(traj)}\n\n{CountEnv.instruction}")


def test_mistral_alternation_error_is_clear(smol_tokenizer):
    chat = ChatFormat(smol_tokenizer, MISTRAL)
    assert chat.system_fold is None and (chat.prompt_lead, chat.history_lead) == ("", " ")
    user = {"role": "user", "content": "u"}
    with pytest.raises(ChatTemplateError) as info:
        chat.render([user, user], add_generation_prompt=True)
    assert str(info.value) == (
        "the chat template raised TemplateError('Conversation roles must alternate user/assistant/user/assistant/...')"
        " rendering messages with roles [user, user]; an agent episode is system (optional), user, then alternating "
        "assistant/user messages: set model.chat_template to a template that renders such a conversation"
    )
    # A reply that starts with the history's space is rendered back to itself without doubling it.
    ids = smol_tokenizer.encode(" go north", add_special_tokens=False) + [chat.eot_id]
    assert chat.split_reply(ids) == ("go north", True)


def test_mistral_last_user_system_is_kept_in_the_first_turn(smol_tokenizer, tiny_model, caplog):
    chat = ChatFormat(smol_tokenizer, MISTRAL_LAST)
    assert chat.system_fold == "moves the system message into the latest user turn, which would change earlier turns"
    # At the first turn the template's own render and the folded one are the same prompt.
    first = [{"role": "system", "content": "S"}, {"role": "user", "content": "O"}]
    assert chat.start("S", "O")[1] == chat.render(first, add_generation_prompt=True) == "<|im_start|>[INST] S\n\nO[/INST]"
    traj = rollout_once(smol_tokenizer, tiny_model, MISTRAL_LAST)
    text = smol_tokenizer.decode(traj.token_ids)
    assert text.count(CountEnv.instruction) == 1 and "[INST] Step 1 done.\n  Keep going.[/INST]" in text
    check_trajectory(traj, smol_tokenizer, tiny_model, chat)


def test_template_that_cannot_hold_an_episode(smol_tokenizer):
    no_replies = "{% for m in messages %}{% if m['role'] == 'assistant' %}{{ raise_exception('no assistant') }}" \
                 "{% endif %}{{ m['content'] }}{% endfor %}"
    with pytest.raises(ChatTemplateError, match=r"raised TemplateError\('no assistant'\) rendering messages with "
                                                r"roles \[user, assistant\]; .* set model.chat_template"):
        ChatFormat(smol_tokenizer, no_replies)


@pytest.mark.parametrize("template", ["qwen3", "r1"])
def test_reasoning_kept_as_sampled_when_history_drops_it(template, smol_tokenizer):
    """The template drops <think> from history; the episode keeps it, stays append-only and needs no fallback."""
    engine = ScriptedEngine(smol_tokenizer, lambda _prompt, n: f"I should act (turn {n}).\n</think>\n\ngo",
                            end_ids=[smol_tokenizer.convert_tokens_to_ids("<|im_end|>")])
    traj = run_rollout(local_parts(engine, CountEnv, max_new_tokens=40, chat_template=TEMPLATES[template]), [(0, 0)],
                       max_turns=5)[0]
    chat = ChatFormat(smol_tokenizer, TEMPLATES[template])
    assert traj.num_turns == 3 and not traj.template_fallback
    assert chat.prompt_lead == ("<think>\n" if template == "r1" else "")
    for prompt in engine.prompts:  # append-only: every prompt the model saw is a prefix of the episode
        assert traj.token_ids[: len(prompt)] == prompt
    for turn in traj.turns:
        assert traj.loss_mask[turn.start : turn.end] == [1] * (turn.end - turn.start)
        assert traj.token_ids[turn.start : turn.end] == smol_tokenizer.encode(turn.text, add_special_tokens=False)
    assert sum(traj.loss_mask) == sum(t.end - t.start for t in traj.turns)
    decoded = smol_tokenizer.decode(traj.token_ids)
    replies = [reply_text(chat, t.text) for t in traj.turns]
    assert decoded == expected_text(chat, traj, replies, CountEnv.instruction)
    assert decoded.count("</think>") == 3  # every turn's reasoning, as the model produced it
    # The plain render of the same messages drops the earlier reasoning: it is not what the model saw.
    messages = chat.start(CountEnv.instruction, first_obs(traj))[0]
    for turn, reply in zip(traj.turns[:-1], replies):
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": turn.observation}]
    assert chat.render(messages, add_generation_prompt=True).count("</think>") == 0


def test_episode_cut_at_max_turns_ends_on_the_generation_prompt(smol_tokenizer):
    """The last observation is committed with the generation prompt; closing the episode then
    adds nothing (it used to append an end-of-turn after the prompt: an empty assistant turn)."""
    from agentgym_core.engine import GenerationResult
    from agentgym_core.rollout.episode import EpisodeBuilder
    from agentgym_core.rollout.trajectory import Trajectory

    chat = ChatFormat(smol_tokenizer)
    traj = Trajectory(episode_id="e", env_name="t", task_id=0, group_id=0, token_ids=[], loss_mask=[], logprobs=[],
                      prompt_len=0)
    ep = EpisodeBuilder(chat, traj, system="Be brief.", first_observation="Task 0.")
    reply = chat.encode("go north")  # cut by max_new_tokens: no end-of-turn sampled
    ep.add_reply(GenerationResult(token_ids=reply, logprobs=[-1.0] * len(reply), finish_reason="length"))
    ep.observation_delta("You moved.")
    ep.commit_observation()
    before = list(traj.token_ids)
    ep.close_reply()
    assert traj.token_ids == before
    prompt = chat.render([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Task 0."},
                          {"role": "assistant", "content": "go north"}, {"role": "user", "content": "You moved."}],
                         add_generation_prompt=True)
    assert chat.decode(traj.token_ids) == prompt and traj.loss_mask.count(1) == len(reply)

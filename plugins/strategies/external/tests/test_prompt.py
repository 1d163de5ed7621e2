"""Requests as the template writes them: tools through a template that supports them (or in the system text
when it does not), tool calls read back from sampled text, earlier replies spliced in as sampled."""
from __future__ import annotations

import json

import pytest
from agentgym_external.prompt import Completion, PromptRenderer
from agentgym_external.tools import RequestError, normalize_messages, parse_tool_calls

from agentgym_core.rollout.chat import ChatFormat

TOOLS = [{"type": "function", "function": {"name": "act", "parameters": {"type": "object"}}}]
#: A ChatML template that writes tools and tool calls itself (as Qwen's and Hermes' do, in short).
TOOL_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n{% endif %}"
    "<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools><|im_end|>\n"
    "{% elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{% endif %}"
    "{%- for m in messages %}{% if m.role != 'system' %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}</tool_call>{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="module")
def tok():
    pytest.importorskip("agentgym_hf")
    from agentgym_hf.loading import load_tokenizer

    return load_tokenizer("smollm2-135m-instruct")


def test_tool_calls_are_read_from_the_reply():
    ids = iter(range(10))
    text = ('I will look.\n<tool_call>\n{"name": "act", "arguments": {"action": "look"}}\n</tool_call>\n'
            '<tool_call>{"name": "act", "parameters": {"action": "go"}}</tool_call>')
    content, calls = parse_tool_calls(text, lambda: f"c{next(ids)}")
    assert content == "I will look."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("c0", "act", {"action": "look"}), ("c1", "act", {"action": "go"})]
    broken = "<tool_call>{not json}</tool_call>"
    assert parse_tool_calls(broken, lambda: "x") == (broken, [])  # what the model wrote, not a call
    assert parse_tool_calls('<tool_call>{"name": "act"', lambda: "x")[1] == []  # cut off mid-call: text


def test_messages_are_checked_with_the_field_named():
    with pytest.raises(RequestError, match=r"messages\[1\].role must be one of"):
        normalize_messages([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])
    with pytest.raises(RequestError, match=r"messages\[0\].content\[0\] is a 'image_url' part"):
        normalize_messages([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
    (m,) = normalize_messages([{"role": "developer", "content": [{"type": "text", "text": "a"}, "b"]}])
    assert m == {"role": "system", "content": "ab"}


def test_a_template_with_tool_support_writes_tools_and_calls_itself(tok):
    renderer = PromptRenderer(ChatFormat(tok, TOOL_TEMPLATE))
    assert renderer.native_tools and renderer.native_calls and renderer.tool_role
    messages = normalize_messages([
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."},
        {"role": "assistant", "content": "", "tool_calls": [  # written by the agent, not sampled: rendered
            {"id": "c1", "type": "function", "function": {"name": "act", "arguments": "{\"action\": \"x\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"}])
    text = tok.decode(renderer.render(messages, TOOLS, "auto", []).ids)
    assert "<tools>act;</tools>" in text and "# Tools" not in text
    assert "<|im_start|>assistant\n<tool_call>act</tool_call><|im_end|>" in text
    assert text.endswith("<|im_start|>tool\ndone<|im_end|>\n<|im_start|>assistant\n")


def test_a_template_without_tool_support_gets_the_schemas_in_its_system_message(tok):
    renderer = PromptRenderer(ChatFormat(tok))  # SmolLM2's: no tools, no tool_calls
    assert not renderer.native_tools and not renderer.native_calls
    messages = normalize_messages([{"role": "user", "content": "Go."}])
    text = tok.decode(renderer.render(messages, TOOLS, "required", []).ids)
    assert text.startswith("<|im_start|>system\n# Tools") and '{"name": "act"' in text
    assert "You must call at least one function" in text


def test_a_reply_sent_back_is_spliced_in_as_sampled(tok):
    chat = ChatFormat(tok)
    renderer = PromptRenderer(chat)
    first = normalize_messages([{"role": "user", "content": "Hi."}])
    p1 = renderer.render(first, [], "auto", [])
    # sampled ids that do not re-tokenize to themselves: "Hel" + "lo" as two pieces of one word
    sampled = tok.encode("Hel", add_special_tokens=False) + tok.encode("lo", add_special_tokens=False) + [chat.eot_id]
    content = chat.split_reply(sampled)[0]
    assert tok.encode(content, add_special_tokens=False) != sampled[:-1]
    done = Completion(0, sampled, True, content)
    second = normalize_messages([{"role": "user", "content": "Hi."}, {"role": "assistant", "content": content},
                                 {"role": "user", "content": "Again."}])
    p2 = renderer.render(second, [], "auto", [done])
    assert p2.spliced == [0] and p2.ids[: len(p1.ids) + len(sampled)] == p1.ids + sampled
    assert tok.decode(p2.ids[len(p1.ids) + len(sampled):]) == "\n<|im_start|>user\nAgain.<|im_end|>\n<|im_start|>assistant\n"

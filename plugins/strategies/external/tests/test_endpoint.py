"""The endpoint as an OpenAI client sees it: keys, tool calls through the chat template, streaming, log-probs,
errors. Served by ``agentgym serve-policy``'s server on loopback; the engine is a real one (tiny model) or one
that answers from a script (to make the model call a tool)."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("agentgym_engine_hf")

from agentgym_external.serve_cmd import standalone_server  # noqa: E402

from agentgym_core.rollout.segments import training_segments  # noqa: E402
from agentgym_core.rollout.trajectory import Trajectory  # noqa: E402
from agentgym_core.testing import ScriptedEngine  # noqa: E402

SECRET = "s3cret"
TOOLS = [{"type": "function", "function": {
    "name": "act", "description": "Do one action in the world.",
    "parameters": {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}}}]


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(engine, **options):
        server = standalone_server(engine, None, secret=SECRET, traces=str(tmp_path / "traces.jsonl"),
                                   max_new_tokens=options.pop("max_new_tokens", 16), max_context=options.pop(
                                       "max_context", 2048), model_name="tiny", host="127.0.0.1", port=0)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _client(server, key=f"{SECRET}:ep"):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=120)


def _finish(server, key=f"{SECRET}:ep", **body) -> dict:
    resp = httpx.post(f"{server.url}/agentgym/episode/finish", json=body, timeout=60,
                      headers={"authorization": f"Bearer {key}"})
    assert resp.status_code == 200, resp.text
    return resp.json()


def _traces(tmp_path) -> list[Trajectory]:
    return [Trajectory.from_dict(json.loads(line)) for line in (tmp_path / "traces.jsonl").read_text().splitlines()]


def test_a_wrong_or_missing_key_is_a_401(hf_engine, serve):
    server = serve(hf_engine)
    assert _client(server).models.list().data[0].id == "tiny"
    for key in ("wrong", f"{SECRET}x:ep"):  # (the client itself refuses to send no key: checked below)
        with pytest.raises(openai.AuthenticationError) as err:
            _client(server, key).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == 401 and err.value.code == "invalid_api_key"
    resp = httpx.post(f"{server.url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
    assert resp.status_code == 401 and "no API key" in resp.json()["error"]["message"]
    # the key may come in a header instead, for frameworks that send an API key of their own
    resp = httpx.post(f"{server.url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]},
                      headers={"authorization": "Bearer sk-theirs", "x-agentgym-key": f"{SECRET}:h"}, timeout=60)
    assert resp.status_code == 200, resp.text


def test_tool_calls_are_parsed_and_the_next_prompt_extends_the_reply_as_sampled(smol, serve, tmp_path):
    call = '<tool_call>\n{"name": "act", "arguments": {"action": "open door"}}\n</tool_call>'
    engine = ScriptedEngine(smol, ["Let me act.\n" + call, "The door is open."])
    server = serve(engine, max_new_tokens=64)
    api = _client(server)
    messages = [{"role": "system", "content": "You are in a house."}, {"role": "user", "content": "Open the door."}]
    first = api.chat.completions.create(model="tiny", messages=messages, tools=TOOLS)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me act."
    (tc,) = choice.message.tool_calls
    assert (tc.function.name, json.loads(tc.function.arguments)) == ("act", {"action": "open door"})
    # the schemas went into the system message (SmolLM2's template ignores `tools`)
    assert '"name": "act"' in smol.decode(engine.prompts[0]) and "<tool_call>" in smol.decode(engine.prompts[0])
    # the agent sends the message back as the SDK gave it, and the tool's answer
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": tc.id, "content": "The door opens."}]
    second = api.chat.completions.create(model="tiny", messages=messages, tools=TOOLS)
    assert second.choices[0].message.content == "The door is open." and not second.choices[0].message.tool_calls
    sampled = engine.prompts[0] + smol.encode("Let me act.\n" + call, add_special_tokens=False) + [smol.eos_token_id]
    assert engine.prompts[1][: len(sampled)] == sampled  # the reply exactly as sampled, not re-rendered
    assert "<|im_start|>tool\nThe door opens.<|im_end|>" in smol.decode(engine.prompts[1][len(sampled):])
    summary = _finish(server, reward=1.0)
    assert (summary["calls"], summary["segments"], summary["prefix_breaks"]) == (2, 1, 0)
    (traj,) = _traces(tmp_path)
    assert traj.success and traj.score == 1.0 and [s.turns for s in training_segments(traj)] == [(0, 1)]
    assert traj.transcript[-2] == {"role": "tool", "content": "The door opens.", "tool_call_id": tc.id}


def test_an_edited_reply_is_context_and_starts_a_segment(smol, serve, tmp_path):
    engine = ScriptedEngine(smol, ["first answer", "second answer"])
    server = serve(engine)
    api = _client(server)
    messages = [{"role": "user", "content": "Question one."}]
    reply = api.chat.completions.create(model="tiny", messages=messages).choices[0].message.content
    messages += [{"role": "assistant", "content": reply.upper()}, {"role": "user", "content": "Question two."}]
    api.chat.completions.create(model="tiny", messages=messages)
    assert _finish(server)["prefix_breaks"] == 1
    (traj,) = _traces(tmp_path)
    assert [s.turns for s in training_segments(traj)] == [(0,), (1,)]
    assert "FIRST ANSWER" in smol.decode(engine.prompts[1])  # rendered from its text: context, never trained
    context = [traj.token_ids[i] for a, b in traj.turns[1].context for i in range(a, b)]
    assert context == engine.prompts[1]


def test_streaming_and_logprobs_give_what_was_recorded(hf_engine, serve, tmp_path):
    server = serve(hf_engine)
    api = _client(server)
    messages = [{"role": "user", "content": "Say something."}]
    whole = api.chat.completions.create(model="tiny", messages=messages, logprobs=True, max_tokens=6, seed=5)
    stream = api.chat.completions.create(model="tiny", messages=messages, max_tokens=6, seed=5, stream=True,
                                         stream_options={"include_usage": True})
    pieces, usage = [], None
    for chunk in stream:
        usage = chunk.usage or usage
        pieces += [c.delta.content or "" for c in chunk.choices]
    assert "".join(pieces) == whole.choices[0].message.content
    assert usage.completion_tokens == whole.usage.completion_tokens == 6
    _finish(server)
    (traj,) = _traces(tmp_path)
    first = traj.turns[0]
    assert [c.logprob for c in whole.choices[0].logprobs.content] == traj.logprobs[first.start:first.end]
    assert len(traj.turns) == 2 and traj.turns[1].context is not None  # the same prompt again: its own segment


def test_requests_it_cannot_serve_are_400s_that_say_why(hf_engine, serve):
    server = serve(hf_engine, max_context=64)
    api = _client(server)
    with pytest.raises(openai.BadRequestError, match="n=2"):
        api.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], n=2)
    with pytest.raises(openai.BadRequestError, match="tool_choice names function 'nope'"):
        api.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], tools=TOOLS,
                                    tool_choice={"type": "function", "function": {"name": "nope"}})
    with pytest.raises(openai.BadRequestError) as err:
        api.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "long " * 80}])
    assert err.value.code == "context_length_exceeded" and "model.max_context=64" in str(err.value)


def test_concurrent_calls_of_one_episode_are_all_kept(hf_engine, serve, tmp_path):
    server = serve(hf_engine)
    api = _client(server)
    messages = [{"role": "user", "content": "Branch."}]
    threads = [threading.Thread(target=lambda: api.chat.completions.create(model="tiny", messages=messages,
                                                                           max_tokens=3)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _finish(server)["calls"] == 4
    (traj,) = _traces(tmp_path)
    assert len(traj.turns) == 4 and traj.num_generated == 12
    closing = len(traj.token_ids) - traj.turns[-1].end  # the end-of-turn marker the last reply did not sample
    assert len(traj.token_ids) == traj.prompt_len + 12 + closing and closing <= 1  # the prompt is stored once

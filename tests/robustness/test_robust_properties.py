"""Property tests (hypothesis): arbitrary model text never crashes the action parser, parsed actions
round-trip, and chat-template delta rendering extends the episode exactly, for any message contents."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym_core.rollout.actions import FORMATS, NON_ACTION_TAGS, parse_action, parse_error_observation

#: Text a model or an env could produce: any characters but lone surrogates (not valid UTF-8),
#: with the chat markers and format keywords mixed in more often than chance would.
MARKERS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "Action:", "Thought:", "\n", "<search>", "</search>",
           "<think>", "</think>", "<answer>", "</answer>", "AGENTGYMSENTINEL0X", "{{", "{%", " "]
TEXT = st.lists(st.one_of(st.text(st.characters(exclude_categories=("Cs",)), max_size=20), st.sampled_from(MARKERS)),
                max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, fmt=st.sampled_from(FORMATS))
def test_parser_never_crashes(text, fmt):
    action, error = parse_action(text, fmt)
    assert (action is None) != (error is None)
    if action is not None:
        assert isinstance(action, str) and action == action.strip() and action
        if fmt != "tags":
            assert action in text
    else:
        assert isinstance(parse_error_observation(error, fmt), str)


LINE = st.text(st.characters(exclude_categories=("Cs", "Zl", "Zp", "Cc")), min_size=1, max_size=40).filter(
    lambda s: s.strip() and s == s.strip())


@settings(max_examples=200, deadline=None)
@given(thought=LINE, action=LINE)
def test_react_action_round_trips(thought, action):
    text = f"Thought: {thought}\nAction: {action}\n"
    assert parse_action(text, "react") == (action, None)


@settings(max_examples=200, deadline=None)
@given(thought=st.text(max_size=30).filter(lambda s: "</think>" not in s),
       tag=st.sampled_from(["search", "answer", "action", "click"]),
       body=st.text(min_size=1, max_size=40).filter(lambda s: s.strip() and "</" not in s))
def test_tag_action_round_trips(thought, tag, body):
    assert tag not in NON_ACTION_TAGS
    text = f"<think>{thought}</think>\n<{tag}>{body}</{tag}>"
    if "<" in thought:  # a thought holding its own complete tag would be an earlier action
        return
    assert parse_action(text, "tags") == (f"<{tag}>{body}</{tag}>", None)


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_free_action_is_the_stripped_reply(text):
    action, error = parse_action(text, "free")
    assert (action, error) == ((text.strip(), None) if text.strip() else (None, "the reply was empty"))


# -- chat-template assembly on the SmolLM2 tokenizer -----------------------------------------------
@pytest.fixture(scope="module")
def chat():
    pytest.importorskip("agentgym_engine_hf", reason="needs the hf engine plugin for the SmolLM2 tokenizer")
    from agentgym_core.rollout.chat import ChatFormat
    from agentgym_hf.loading import load_tokenizer

    return ChatFormat(load_tokenizer("smollm2-135m-instruct"))


CONTENT = st.lists(st.one_of(st.text(st.characters(exclude_categories=("Cs",)), max_size=15),
                             st.sampled_from([m for m in MARKERS if "SENTINEL" not in m])), max_size=5).map("".join)


@pytest.mark.slow
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(system=CONTENT, first=CONTENT, turns=st.lists(st.tuples(CONTENT, CONTENT, st.booleans()), min_size=1, max_size=4))
def test_delta_rendering_is_a_true_extension(chat, system, first, turns):
    """Replies as sampled + template deltas decode to the template's render of the same conversation."""
    from agentgym_core.engine import GenerationResult
    from agentgym_core.rollout.episode import EpisodeBuilder
    from agentgym_core.rollout.trajectory import Trajectory

    traj = Trajectory(episode_id="p", env_name="p", task_id=0, group_id=0, token_ids=[], loss_mask=[],
                      logprobs=[], prompt_len=0)
    ep = EpisodeBuilder(chat, traj, system=system, first_observation=first)
    # an empty system prompt means no system message (the template's default, if any, applies)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": first}]
    sampled: set[int] = set()
    for reply, observation, eot in turns:
        ids = chat.encode(reply) + ([chat.eot_id] if eot else [])
        start = len(traj.token_ids)
        ep.add_reply(GenerationResult(ids, [0.0] * len(ids), "stop"))
        sampled.update(range(start, start + len(ids)))
        before = list(traj.token_ids)
        ep.observation_delta(observation)
        ep.commit_observation()
        assert traj.token_ids[: len(before)] == before  # appended, never rewritten
        body = ids[:-1] if ids and ids[-1] == chat.eot_id else ids  # a sampled end-of-turn token ends the message
        messages += [{"role": "assistant", "content": chat.decode(body)},
                     {"role": "user", "content": observation}]
        # decode(encode(...)): the GGUF-converted SmolLM2 tokenizer is lossy for a few rare code points
        # (e.g. U+40000 -> 3x token 218), identically in the episode and in a plain render.
        assert chat.decode(traj.token_ids) == chat.decode(chat.encode(chat.render(messages, add_generation_prompt=True)))
    assert not traj.template_fallback
    assert {i for i, m in enumerate(traj.loss_mask) if m} == sampled
    assert len(traj.token_ids) == len(traj.loss_mask) == len(traj.logprobs)

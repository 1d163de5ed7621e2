"""Action parsing per format, and the hint an unparsable reply gets."""
from __future__ import annotations

import pytest

from agentgym_core.rollout.actions import parse_action, parse_error_observation


@pytest.mark.parametrize("text, action", [
    ("Thought: the door is north.\nAction: go north", "go north"),
    ("Thought: x\nAction:   pick up key  \nObservation: made up", "pick up key"),
    ("thought: lower case\naction: open door", "open door"),
    ("Thought: two lines\nAction:\nAction: toggle", "toggle"),
    ("Thought: same line. Action: go west", "go west"),
])
def test_react(text, action):
    assert parse_action(text, "react") == (action, None)


@pytest.mark.parametrize("text, reason", [
    ("I will go north.", "no 'Action:' line found"),
    ("Thought: hmm\nAction:", "the 'Action:' line was empty"),
])
def test_react_errors(text, reason):
    assert parse_action(text, "react") == (None, reason)


def test_tags_skip_thinking_and_keep_the_whole_tag():
    text = "<think>I should <b>search</b></think> <search>capital of France</search> <answer>Paris</answer>"
    assert parse_action(text, "tags") == ("<search>capital of France</search>", None)
    assert parse_action("<answer> </answer>", "tags")[1] == "the <answer> tag was empty"
    assert parse_action("Paris", "tags")[0] is None


def test_free_and_hint():
    assert parse_action("  move left \n", "free") == ("move left", None)
    assert parse_action(" \n", "free") == (None, "the reply was empty")
    hint = parse_error_observation("no 'Action:' line found", "react")
    assert hint.startswith("Invalid reply: no 'Action:' line found.") and "Action: <one action>" in hint
    with pytest.raises(ValueError, match="react, tags, free"):
        parse_action("x", "json")

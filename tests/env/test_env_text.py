"""The action text helpers every text-game env shares (agentgym_core.env.text)."""
from __future__ import annotations

from agentgym_core.env.text import agentgym_action, normalize_action


def test_normalize_action():
    assert normalize_action("Thought: x\nAction: Go to the Red Ball.") == "go to the red ball"
    assert normalize_action("Action: open door\nAction: `Turn   Left`\nmore") == "turn left"  # the last mark counts
    assert normalize_action("  `turn   left` ") == "turn left"
    assert normalize_action("[inventory]!") == "inventory"
    assert normalize_action("get 1 oak log\nand then craft") == "get 1 oak log"  # the first line only
    assert normalize_action("") == ""


def test_agentgym_action_reads_like_agentgyms_clients():
    # the text after the last "Action:" to the end of its line; blank lines after the mark are skipped
    assert agentgym_action("Thought:\nfind it\n\nAction:\ngo to red ball 1") == "go to red ball 1"
    assert agentgym_action("Action: turn left\nAction: pickup grey key 2\n") == "pickup grey key 2"
    # only letters, digits, commas and spaces are kept, whitespace collapsed, case kept
    assert agentgym_action("craft 4 oak_planks using 1 oak log!") == "craft 4 oakplanks using 1 oak log"
    assert agentgym_action("get   1\tblue-orchid.") == "get 1blueorchid"
    assert agentgym_action("Go To Red Ball 1") == "Go To Red Ball 1"
    # our agents send the bare action: without a mark the whole text is the action
    assert agentgym_action("toggle and go through red closed door 1") == "toggle and go through red closed door 1"
    assert agentgym_action("action: lower-case mark") == "action lowercase mark"  # the mark is case-sensitive
    assert agentgym_action("") == ""

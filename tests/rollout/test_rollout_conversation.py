"""A demonstration's tokens are the rollout's: ``encode_conversation`` against real rollouts, and masks by hand."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentgym_core import BaseEnv
from agentgym_core.assembly import AgentSettings, local_parts
from agentgym_core.conversation import ConversationError, check_messages, encode_conversation, episode_messages, reply_text
from agentgym_core.rollout.chat import ChatFormat
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.testing import ScriptedEngine

sys.path.insert(0, str(Path(__file__).parent))
from test_agent_templates import TEMPLATES  # noqa: E402


class Steps(BaseEnv):
    """Three 'go N' actions end an episode; the observation repeats the action."""

    instruction = "Walk three steps. Reply as: Action: go <n>"
    action_format = "react"

    def splits(self):
        return {"train": range(4), "test": range(4, 6)}

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return f"Task {task_id}: you stand at 0."

    def step(self, action):
        self.n += 1
        done = self.n >= 3
        return f"You went ({action}); now at {self.n}.", float(done), done, {"success": done}


ACTIONS = ["go 1", "go 2", "go 3"]


def _rollout(tokenizer, template, position, system_prompt=None):
    chat = ChatFormat(tokenizer, template)
    end = [chat.eot_id] if chat.eot_id is not None else chat.encode(chat.eot_text)
    replies = [reply_text(a, "react") for a in ACTIONS]
    engine = ScriptedEngine(tokenizer, replies, end_ids=end)
    parts = local_parts(engine, Steps, name="steps", chat_template=template, instruction_position=position,
                        system_prompt=system_prompt, max_new_tokens=32)
    traj = run_rollout(parts, [(1, 0)], max_turns=5, seed=0)[0]
    assert traj.success and not traj.template_fallback
    return chat, traj, parts.agent


@pytest.mark.parametrize("template", list(TEMPLATES))
@pytest.mark.parametrize("position", ["system", "after_observation"])
def test_demonstration_tokens_equal_the_rollouts(smol_tokenizer, template, position):
    chat, traj, agent = _rollout(smol_tokenizer, TEMPLATES[template], position, system_prompt="Be brief.")
    steps = [type("S", (), {"action": t.action, "observation": t.observation}) for t in traj.turns]
    first = "Task 1: you stand at 0."
    messages = episode_messages(Steps.instruction, agent, "react", first, steps)
    ids, mask = encode_conversation(chat, messages)
    assert ids == traj.token_ids
    assert mask == traj.loss_mask


def test_masks_by_hand(smol_tokenizer):
    """ChatML: the prompt and each user turn are context; each reply and its <|im_end|> are trained."""
    chat = ChatFormat(smol_tokenizer)
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                {"role": "assistant", "content": "Action: go 1"}, {"role": "user", "content": "O"},
                {"role": "assistant", "content": "Action: go 2"}]
    ids, mask = encode_conversation(chat, messages)
    enc = chat.encode
    end = enc("<|im_end|>")
    prompt = enc("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n")
    observation = enc("\n<|im_start|>user\nO<|im_end|>\n<|im_start|>assistant\n")
    reply1, reply2 = enc("Action: go 1") + end, enc("Action: go 2") + end
    assert ids == prompt + reply1 + observation + reply2
    assert mask == [0] * len(prompt) + [1] * len(reply1) + [0] * len(observation) + [1] * len(reply2)
    text = smol_tokenizer.decode(ids, skip_special_tokens=False)
    assert text == chat.render(messages, add_generation_prompt=False).rstrip("\n")


def test_replies_parse_back_to_the_action():
    assert reply_text("craft 1 stick using 2 oak planks", "react") == "Action: craft 1 stick using 2 oak planks"
    assert reply_text("<search>paris</search>", "tags") == "<search>paris</search>"
    assert reply_text("edit 3\n    return x", "free") == "edit 3\n    return x"
    with pytest.raises(ConversationError, match="cannot be written as a react reply"):
        reply_text("edit 3\n    return x", "react")
    with pytest.raises(ConversationError, match="one tag"):
        reply_text("search paris", "tags")


def test_conversation_shape_is_checked():
    with pytest.raises(ConversationError, match="roles are \\[user, user\\]"):
        check_messages([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "demos.jsonl:3")
    with pytest.raises(ConversationError, match="demos.jsonl:4: message 0"):
        check_messages([{"role": "user"}], "demos.jsonl:4")
    with pytest.raises(ConversationError, match="ending with an assistant reply"):
        check_messages([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])


def test_agent_prompt_places_the_instruction_as_the_rollout_does():
    from agentgym_core.conversation import agent_prompt

    before = AgentSettings(instruction_position="before_observation", system_prompt="P")
    assert agent_prompt("I", before, "O") == ("P", "I\n\nO")
    assert agent_prompt("I", AgentSettings(system_prompt="P"), "O") == ("P\n\nI", "O")

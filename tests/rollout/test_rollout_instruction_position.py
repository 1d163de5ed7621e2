"""agent.instruction_position puts the env's instruction in the system message or the first user message."""
import asyncio

import pytest

from agentgym_core import BaseEnv
from agentgym_core.config import load_config
from agentgym_core.assembly import local_parts
from agentgym_core.errors import ConfigError
from agentgym_core.rollout.runner import rollout
from agentgym_core.testing import ScriptedEngine


class OneTurn(BaseEnv):
    instruction = "INSTRUCTION-TEXT"
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        return "OBSERVATION-TEXT"

    def step(self, action):
        return "bye", 1.0, True, {"success": True}


def RecordingEngine(tokenizer):
    """Answers every prompt with 'done' and keeps the prompts."""
    return ScriptedEngine(tokenizer, ["done"], end_ids=[tokenizer.convert_tokens_to_ids("<|im_end|>")], logprob=0.0)


@pytest.mark.parametrize("position", ["system", "before_observation", "after_observation"])
def test_instruction_position(smol_tokenizer, position):
    engine = RecordingEngine(smol_tokenizer)
    parts = local_parts(engine, OneTurn, name="one", instruction_position=position, temperature=0.0)
    trajs = asyncio.run(rollout(parts, [(0, 0)], max_turns=1))
    text = smol_tokenizer.decode(engine.prompts[0])
    user = text[text.index("<|im_start|>user"):]
    if position == "system":
        assert "INSTRUCTION-TEXT" in text[: text.index("<|im_start|>user")] and "INSTRUCTION-TEXT" not in user
    else:
        first, second = ("INSTRUCTION-TEXT", "OBSERVATION-TEXT") if position == "before_observation" else \
            ("OBSERVATION-TEXT", "INSTRUCTION-TEXT")
        assert user.index(first) < user.index(second)
    assert trajs[0].success


def test_instruction_position_is_validated(plugin_manager):
    with pytest.raises(ConfigError, match="agent.instruction_position must be"):
        load_config(None, ["agent.instruction_position=middle"], plugin_manager)


def test_overriding_the_envs_action_format_is_said_once(smol_tokenizer, caplog):
    """agent.action_format=free on an env whose instruction asks for Thought/Action: a warning,
    once per process, naming both formats (the quickstart's block copied to a react env)."""
    import logging

    class ReactEnv(OneTurn):
        action_format = "react"

    engine = RecordingEngine(smol_tokenizer)
    caplog.set_level(logging.WARNING, logger="agentgym.rollout")
    for _ in range(2):
        asyncio.run(rollout(local_parts(engine, ReactEnv, name="reacty", action_format="free", temperature=0.0),
                            [(0, 0)], max_turns=1))
    told = [r.getMessage() for r in caplog.records if "overrides env" in r.getMessage()]
    assert told == ["agent.action_format=free overrides env 'reacty''s react format: its instruction asks for replies "
                    "like \"Thought: ... Action: X\", which are now read as the action itself (the whole reply). "
                    "Drop agent.action_format to use the env's own."]
    caplog.clear()
    asyncio.run(rollout(local_parts(engine, OneTurn, name="one", instruction="x", action_format="free",
                                    temperature=0.0), [(0, 0)], max_turns=1))
    assert not [r for r in caplog.records if "overrides env" in r.getMessage()]


def test_brief_babyai_asks_for_the_bare_action():
    pytest.importorskip("agentgym_env_babyai")
    from agentgym_env_babyai.env import BabyAIEnv

    assert BabyAIEnv(brief=True, levels="GoToLocal").describe()["action_format"] == "free"
    assert BabyAIEnv(levels="GoToLocal").describe()["action_format"] == "react"

"""agent.instruction_position puts the env's instruction in the system message or the first user message."""
import asyncio

import pytest

from agentgym_core import BaseEnv
from agentgym_core.config import load_config
from agentgym_core.engine import Engine, GenerationResult
from agentgym_core.env.pool import LocalEnvPool
from agentgym_core.errors import ConfigError
from agentgym_core.rollout.runner import rollout


class OneTurn(BaseEnv):
    instruction = "INSTRUCTION-TEXT"
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        return "OBSERVATION-TEXT"

    def step(self, action):
        return "bye", 1.0, True, {"success": True}


class RecordingEngine(Engine):
    """Answers every prompt with 'done' and keeps the prompts."""

    def __init__(self, tokenizer):
        self._tok = tokenizer
        self.prompts = []

    @property
    def tokenizer(self):
        return self._tok

    def generate(self, requests):
        reply = self._tok.encode("done", add_special_tokens=False) + [self._tok.convert_tokens_to_ids("<|im_end|>")]
        self.prompts += [r.prompt_ids for r in requests]
        return [GenerationResult(reply, [0.0] * len(reply), "stop", len(r.prompt_ids)) for r in requests]

    def update_weights(self, source):
        pass


@pytest.mark.parametrize("position", ["system", "before_observation", "after_observation"])
def test_instruction_position(smol_tokenizer, position):
    engine = RecordingEngine(smol_tokenizer)
    pool = LocalEnvPool(OneTurn, name="one")
    trajs = asyncio.run(rollout(engine, pool, [(0, 0)], max_turns=1, instruction=OneTurn.instruction,
                                action_format="free", agent_cfg={"instruction_position": position},
                                rollout_cfg={"temperature": 0.0}))
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
        asyncio.run(rollout(engine, LocalEnvPool(ReactEnv, name="reacty"), [(0, 0)], max_turns=1,
                            instruction=ReactEnv.instruction, action_format="react",
                            agent_cfg={"action_format": "free"}, rollout_cfg={"temperature": 0.0}, env_name="reacty"))
    told = [r.getMessage() for r in caplog.records if "overrides env" in r.getMessage()]
    assert told == ["agent.action_format=free overrides env 'reacty''s react format: its instruction asks for replies "
                    "like \"Thought: ... Action: X\", which are now read as the action itself (the whole reply). "
                    "Drop agent.action_format to use the env's own."]
    caplog.clear()
    asyncio.run(rollout(engine, LocalEnvPool(OneTurn, name="one"), [(0, 0)], max_turns=1, instruction="x",
                        action_format="free", agent_cfg={"action_format": "free"}, rollout_cfg={"temperature": 0.0}))
    assert not [r for r in caplog.records if "overrides env" in r.getMessage()]


def test_brief_babyai_asks_for_the_bare_action():
    pytest.importorskip("agentgym_env_babyai")
    from agentgym_env_babyai.env import BabyAIEnv

    assert BabyAIEnv(brief=True, levels="GoToLocal").describe()["action_format"] == "free"
    assert BabyAIEnv(levels="GoToLocal").describe()["action_format"] == "react"

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

"""A misspelt LLMAgent argument is refused where it is written, with a "did you mean" (issue 40, frictions)."""
from __future__ import annotations

import pytest

from agentgym.agents import LLMAgent
from agentgym_core import AgentGymError, ConfigError


def test_a_misspelt_constructor_argument_is_refused_when_the_agent_is_made():
    with pytest.raises(ConfigError, match=r"unknown argument 'dtyp'\. Did you mean 'dtype'\?") as info:
        LLMAgent(dtyp="fp32")
    assert "engine 'hf''s options: device," in str(info.value)
    with pytest.raises(ConfigError, match="max_batch_size"):
        LLMAgent(max_batch_size="many")  # an engine option, with a value it cannot take
    assert LLMAgent(device="cpu").engine_options == {"device": "cpu"}  # an engine option passes through


def test_a_misspelt_train_argument_is_named_not_taken_for_a_config_key():
    agent = LLMAgent()
    with pytest.raises(AgentGymError, match=r"max_step=\.\.\.\) is not an argument\. Did you mean 'max_steps'\?"):
        agent.train_config("babyai", max_step=3)
    with pytest.raises(AgentGymError, match="dotted config keys"):
        agent.train_config("babyai", lr=1e-5)  # not close to an argument: a config key without its section

"""``LLMAgent(strategy=..., strategy_options=...)``: infer with a strategy, train with it in the config."""
from __future__ import annotations

import pytest

from agentgym_core import BaseEnv
from agentgym.agents import LLMAgent
from agentgym_core.errors import ConfigError, UnknownNameError
from agentgym_core.rollout.trajectory import Trajectory


class NoLuckEnv(BaseEnv):
    instruction = "Say anything."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return "A locked door."

    def step(self, action):
        self.n += 1
        return "No luck.", 0.0, self.n >= 2, {"success": False}


@pytest.mark.slow
def test_infer_with_reflect_and_plan(hf_tiny_model_dir):
    options = dict(base_model=str(hf_tiny_model_dir), dtype="fp32", max_new_tokens=6, max_turns=3, temperature=1.0, threads=1)
    agent = LLMAgent(**options, strategy="reflect", strategy_options={"attempts": 2, "max_tokens": 8})
    attempts = agent.infer(NoLuckEnv, all_attempts=True)
    assert [t.attempt for t in attempts] == [1, 2] and attempts[1].memory
    last = agent.infer(NoLuckEnv)
    assert isinstance(last, Trajectory) and last.attempt == 2 and last.token_ids == attempts[1].token_ids
    agent.close()
    planner = LLMAgent(**options, strategy="plan", strategy_options={"max_tokens": 8})
    traj = planner.infer(NoLuckEnv)
    assert [t.kind for t in traj.turns] == ["plan", "action", "action"]
    assert planner.infer(NoLuckEnv, all_attempts=True)[0].token_ids == traj.token_ids
    planner.close()


def test_strategy_names_and_options_are_checked_at_once():
    with pytest.raises(UnknownNameError, match="unknown strategy 'reflct'. Did you mean 'reflect'"):
        LLMAgent(strategy="reflct")
    with pytest.raises(ConfigError, match="strategy 'reflect': unknown option 'atempts'. Did you mean 'attempts'"):
        LLMAgent(strategy="reflect", strategy_options={"atempts": 2})
    with pytest.raises(ConfigError, match="attempts must be >= 1"):
        LLMAgent(strategy="reflect", strategy_options={"attempts": 0})


def test_train_config_carries_the_strategy():
    pytest.importorskip("agentgym_env_babyai")
    cfg = LLMAgent(strategy="reflect", strategy_options={"attempts": 2}).train_config("babyai", max_steps=1)
    assert cfg.agent.strategy.name == "reflect" and cfg.agent.strategy.attempts == 2
    assert LLMAgent().train_config("babyai").agent.strategy.name == "default"

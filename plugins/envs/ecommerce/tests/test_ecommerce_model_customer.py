"""The customer played by a model through the hf engine plugin (a tiny random model: the wiring, not the wording)."""
from __future__ import annotations

import pytest

from agentgym_env_ecommerce.agents import ExpertAgent, respond
from agentgym_env_ecommerce.env import ECommerceServiceEnv

pytestmark = pytest.mark.slow


def test_model_customer_talks_and_the_store_still_decides_the_reward(tiny_model):
    pytest.importorskip("agentgym_engine_hf")
    env = ECommerceServiceEnv(user="model", user_model=str(tiny_model), user_max_tokens=12,
                              user_engine_options={"dtype": "fp32"})
    try:
        task_id = next(t for t in env.splits()["test"] if env.category(t) == "cancel")
        first = env.reset(task_id=task_id)
        assert first.startswith("Customer: ") and len(first) > len("Customer: ")
        assert env.reset(task_id=task_id) == first  # greedy: reproducible
        obs, reward, done, info = env.step(respond("Hello! What is your email?"))
        assert obs.startswith("Customer: ") and not done
        # the expert cannot learn the details from a random model's lines: it never makes a confirmed change
        agent, done = ExpertAgent(), False
        while not done:
            obs, reward, done, info = env.step(agent(obs))
        assert reward == 0.0
    finally:
        env.close()

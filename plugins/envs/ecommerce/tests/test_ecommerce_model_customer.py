"""The customer played by a model through the hf engine plugin (a tiny random model: the wiring, not the wording)."""
from __future__ import annotations

import pytest

from agentgym_env_ecommerce.agents import call, respond
from agentgym_env_ecommerce.env import ECommerceServiceEnv
from agentgym_env_ecommerce.model_customer import system_prompt

pytestmark = pytest.mark.slow


def test_model_customer_talks_and_the_store_still_decides_the_reward(tiny_model):
    pytest.importorskip("agentgym_engine_hf")
    env = ECommerceServiceEnv(customer="model", customer_model=str(tiny_model), customer_max_tokens=12,
                              customer_engine_options={"dtype": "fp32"})
    try:
        task_id = next(t for t in env.splits()["test"] if env.category(t) == "cancel")
        first = env.reset(task_id=task_id)
        assert first.startswith("Customer: ") and len(first) > len("Customer: ")
        assert env.reset(task_id=task_id) == first  # greedy: reproducible
        s = env.scenario
        obs, reward, done, info = env.step(respond("Hello! What is your email?"))
        assert obs.startswith("Customer: ") and not done
        assert env.step(call("find_customer", email=s.customer["email"]))[0].startswith("Found customer")
        obs, reward, done, info = env.step(call("cancel_order", order_id=s.order_id, reason=s.details["reason"]))
        assert done and reward == 0.0 and "explicit confirmation" in info["forbidden"]  # a random model never says yes
    finally:
        env.close()
    prompt = system_prompt(s, env.catalog)
    assert s.order_id in prompt and s.customer["zip"] in prompt and "only when asked" in prompt

"""Hooks only: registers the ``ecommerce`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "ecommerce",
        "agentgym_env_ecommerce.env:ECommerceServiceEnv",
        description="customer service for a generated store: tools, a written policy, a simulated customer; "
                    "reward = store state equals the goal and asked facts told",
    )


@hookimpl
def register_experts(registry):
    registry.add("ecommerce.reference", "agentgym_env_ecommerce.agents:ExpertAgent",
                 description="the scripted expert: identify, look up, act within the policy, confirm what will change")

"""Hooks only: registers the ``office`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "office",
        "agentgym_env_office.env:OfficeEnv",
        description="office assistant: meeting notes -> action items with owners and deadlines, meetings booked in "
                    "everyone's free slot, mail-driven moves; a simulated colleague; reward = calendar and items equal "
                    "the goal",
    )


@hookimpl
def register_experts(registry):
    registry.add("office.reference", "agentgym_env_office.agents:ExpertAgent",
                 description="the scripted expert: reads the requests, plans the writes, confirms each with what it "
                             "will change, makes them (100% on every split)")

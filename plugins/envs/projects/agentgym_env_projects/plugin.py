"""Hooks only: registers the ``projects`` env (nothing heavy is imported here)."""
from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add(
        "projects",
        "agentgym_env_projects.env:ProjectsEnv",
        description="project planning: requirements -> tasks with dependencies, allocation by skill and capacity, "
                    "re-planning after slips and leave; a simulated project manager; reward = plan equals the goal",
    )


@hookimpl
def register_experts(registry):
    registry.add("projects.reference", "agentgym_env_projects.agents:ExpertAgent",
                 description="the scripted expert: reads the requests, plans the writes, confirms each with what it "
                             "will change, makes them (100% on every split)")

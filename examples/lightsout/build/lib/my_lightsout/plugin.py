from agentgym_core import hookimpl


@hookimpl
def register_envs(registry):
    registry.add("lightsout", "my_lightsout.env:LightsOutEnv", description="Lights Out on a small grid")

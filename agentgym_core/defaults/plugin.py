"""The internal plugin ``core``: the defaults core itself needs."""
from agentgym_core.hookspecs import hookimpl


@hookimpl
def register_schedulers(registry):
    registry.add("fixed", "agentgym_core.defaults.components:FixedScheduler",
                 description="the same maximum number of turns at every step")


@hookimpl
def register_rewards(registry):
    registry.add("success", "agentgym_core.defaults.components:SuccessReward",
                 description="1 on the last turn of a successful episode, else 0")


@hookimpl
def register_backends(registry):
    registry.add("cpu", "agentgym_core.defaults.components:CPUBackend",
                 description="CPU, gloo process groups, bf16 where the CPU supports it")

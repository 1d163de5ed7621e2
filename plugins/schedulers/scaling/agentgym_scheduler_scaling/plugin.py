"""Hooks only: registers the ``scaling_inter``, ``linear`` and ``adaptive`` schedulers."""
from agentgym_core import hookimpl


@hookimpl
def register_schedulers(registry):
    registry.add("scaling_inter", "agentgym_scheduler_scaling.schedulers:ScalingInterScheduler",
                 description="ScalingInter-RL: max turns rises in stages (rounds) every step_interval steps")
    registry.add("linear", "agentgym_scheduler_scaling.schedulers:LinearScheduler",
                 description="max turns ramps linearly from start to end over a number of steps")
    registry.add("adaptive", "agentgym_scheduler_scaling.schedulers:AdaptiveScheduler",
                 description="max turns moves to the next stage when the windowed success rate passes a threshold")

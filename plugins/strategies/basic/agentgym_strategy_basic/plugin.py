"""Hooks only: registers the ``plan`` and ``reflect`` strategies."""
from agentgym_core import hookimpl


@hookimpl
def register_strategies(registry):
    registry.add("plan", "agentgym_strategy_basic.plan:PlanStrategy",
                 description="the first reply is a plan, kept in context (history window too), optionally revised")
    registry.add("reflect", "agentgym_strategy_basic.reflect:ReflectStrategy",
                 description="Reflexion: after a failed attempt a short reflection goes into the next attempt's prompt")

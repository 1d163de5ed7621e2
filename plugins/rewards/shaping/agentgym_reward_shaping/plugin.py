"""Hooks only: registers the ``format``, ``step_penalty``, ``decay`` and ``normalize`` rewards."""
from agentgym_core import hookimpl


@hookimpl
def register_rewards(registry):
    registry.add("format", "agentgym_reward_shaping.rewards:FormatReward",
                 description="-penalty on each turn whose action was unparsable or invalid")
    registry.add("step_penalty", "agentgym_reward_shaping.rewards:StepPenaltyReward",
                 description="-cost on every turn (shorter episodes score higher)")
    registry.add("decay", "agentgym_reward_shaping.rewards:DecayReward",
                 description="mistakes cost base * growth**turn: later mistakes cost more")
    registry.add("normalize", "agentgym_reward_shaping.rewards:NormalizeReward",
                 description="the env score mapped from [low, high] to [0, 1] or [-1, 1], on the last turn")

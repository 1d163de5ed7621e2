"""Hooks of the ``rl`` trainer plugin (imports nothing heavy)."""
from agentgym_core import hookimpl


@hookimpl
def register_trainers(registry):
    registry.add("rl", "agentgym_trainer_rl.trainer:RLTrainer", config="agentgym_trainer_rl.config:RLConfig",
                 description="PPO (GAE), GRPO, RLOO, REINFORCE++; LoRA or full fine-tuning; accelerate")

"""Hooks of the ``sft`` trainer plugin (imports nothing heavy)."""
from agentgym_core import hookimpl


@hookimpl
def register_trainers(registry):
    registry.add("sft", "agentgym_trainer_sft.trainer:SFTTrainer", config="agentgym_trainer_sft.config:SFTConfig",
                 description="supervised fine-tuning on chat conversations (expert demonstrations); LoRA or full")

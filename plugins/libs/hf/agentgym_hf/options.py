"""The fine-tuning options every trainer of transformers models shares (no torch import: configs load fast).

A trainer's ``Config`` extends :class:`FinetuneConfig` (and core's
:class:`~agentgym_core.trainer.TrainerConfig`), so ``trainer.finetune``, ``trainer.lora_r``,
``trainer.lr`` ... mean the same under ``rl`` and ``sft``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agentgym_core import check_range


@dataclass
class FinetuneConfig:
    lr: float = 1e-5
    weight_decay: float = 0.0
    warmup_steps: int = 0
    #: ``lora`` (peft adapters; reference = adapters disabled) or ``full``.
    finetune: str = "lora"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    #: LoRA on the last N decoder layers only (0: all). Backward then stops at layer -N: cheaper.
    lora_layers: int = 0
    gradient_checkpointing: bool = False
    #: ``adamw`` (torch; fused on CUDA) or ``adamw_8bit`` (bitsandbytes, CUDA only: optimizer state in 8 bits).
    optimizer: str = "adamw"

    def __post_init__(self) -> None:
        parent = getattr(super(), "__post_init__", None)  # the next options class of a trainer's Config
        if parent is not None:
            parent()
        if self.finetune not in ("lora", "full"):
            raise ValueError(f"trainer.finetune must be one of lora, full, got {self.finetune!r}")
        if self.optimizer not in ("adamw", "adamw_8bit"):
            raise ValueError(f"trainer.optimizer must be one of adamw, adamw_8bit, got {self.optimizer!r}")
        check_range("trainer.lora_r", self.lora_r, ge=1)
        check_range("trainer.lr", self.lr, gt=0)
        check_range("trainer.weight_decay", self.weight_decay, ge=0)
        check_range("trainer.warmup_steps", self.warmup_steps, ge=0, note="0: no warm-up")
        # lora_alpha / lora_r scales the adapters: 0 would leave the model untrained.
        check_range("trainer.lora_alpha", self.lora_alpha, ge=1)
        check_range("trainer.lora_dropout", self.lora_dropout, ge=0, lt=1)
        check_range("trainer.lora_layers", self.lora_layers, ge=0, note="0: every layer")

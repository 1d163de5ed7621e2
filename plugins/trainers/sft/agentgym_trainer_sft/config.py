"""The ``trainer`` section of a run config when ``trainer.name: sft``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agentgym_core import TrainerConfig, check_range
from agentgym_hf.options import FinetuneConfig


@dataclass
class SFTConfig(FinetuneConfig, TrainerConfig):
    """Supervised fine-tuning on conversations. The lifecycle options (``save_every``, ...) are core's
    :class:`TrainerConfig`, the model's (``lr``, ``finetune``, ``lora_*``) agentgym-hf's
    :class:`FinetuneConfig`, as under ``rl``."""

    #: The conversations: a chat-messages JSONL file (``agentgym demos`` writes one), a folder of them,
    #: or a Hugging Face dataset folder (``save_to_disk``) with a ``messages`` column.
    data: str = ""
    #: Instead of ``data``: record demonstrations of this expert of the env (``agentgym list experts``) into
    #: the run directory (``demos.jsonl``) first, for this config's agent settings, from the train split.
    demos_expert: str = ""
    #: How many successful episodes to record with ``demos_expert``.
    demos_episodes: int = 200
    #: Passes over the data; the number of steps follows (unless ``steps`` > 0).
    epochs: float = 3.0
    #: Optimizer steps (0: ``epochs`` passes over the data).
    steps: int = 0
    #: Rows (conversations, or packed rows) per micro-batch, and micro-batches per step.
    batch_size: int = 4
    grad_accum: int = 1
    lr: float = 1e-4
    max_grad_norm: float = 1.0
    #: Conversations longer than this many tokens are cut (their later replies untrained); warned about.
    max_length: int = 2048
    #: Pack several conversations into one row of up to ``max_length`` tokens (each attends only to itself).
    packing: bool = False
    min_steps: ClassVar[int] = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if bool(self.data) == bool(self.demos_expert):
            raise ValueError("give trainer.data (a chat-messages JSONL file, e.g. from `agentgym demos ENV --out FILE`, "
                             "a folder of them, or a Hugging Face dataset folder) or trainer.demos_expert (an expert of "
                             "the env, whose demonstrations are recorded into the run directory first), not both")
        check_range("trainer.demos_episodes", self.demos_episodes, ge=1)
        check_range("trainer.epochs", self.epochs, gt=0)
        check_range("trainer.batch_size", self.batch_size, ge=1)
        check_range("trainer.grad_accum", self.grad_accum, ge=1)
        check_range("trainer.max_grad_norm", self.max_grad_norm, gt=0, note="inf: no clipping")
        check_range("trainer.max_length", self.max_length, ge=16)

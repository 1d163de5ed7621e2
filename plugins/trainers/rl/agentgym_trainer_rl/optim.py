"""The optimizer a run asks for: ``trainer.optimizer: adamw | adamw_8bit``."""
from __future__ import annotations

from typing import Any

import torch

from agentgym_core.errors import AgentGymError


def make_optimizer(params: list[torch.nn.Parameter], settings: Any, device: Any) -> torch.optim.Optimizer:
    """AdamW over *params* with ``trainer.lr`` and ``weight_decay``: torch's (fused kernels on CUDA),
    or bitsandbytes' 8-bit AdamW (its two moments take 2 bytes per parameter instead of 8)."""
    kind = torch.device(device).type
    if settings.optimizer == "adamw_8bit":
        if kind != "cuda":
            raise AgentGymError(f"trainer.optimizer=adamw_8bit runs on CUDA only (bitsandbytes' 8-bit AdamW); this "
                                f"run trains on {device}: use trainer.optimizer=adamw")
        try:
            import bitsandbytes as bnb
        except ImportError as exc:
            raise AgentGymError("trainer.optimizer=adamw_8bit needs bitsandbytes, which is not installed: "
                                "pip install 'agentgym-trainer-rl[bnb]' (or pip install bitsandbytes), or use "
                                "trainer.optimizer=adamw") from exc
        return bnb.optim.AdamW8bit(params, lr=settings.lr, weight_decay=settings.weight_decay)
    fused = {"fused": True} if kind == "cuda" else {}
    return torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay, **fused)

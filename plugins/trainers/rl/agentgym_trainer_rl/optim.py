"""The optimizer a run asks for: ``trainer.optimizer: adamw | adamw_8bit`` (:mod:`agentgym_hf.training`)."""
from __future__ import annotations

from agentgym_hf.training import make_optimizer

__all__ = ["make_optimizer"]

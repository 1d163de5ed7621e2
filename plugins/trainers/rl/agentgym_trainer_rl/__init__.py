"""The ``rl`` trainer: rollout -> rewards -> advantages -> policy update -> checkpoint.

The public pieces of one update, for benchmarks and for code that runs an update outside
``agentgym train`` (imported on first use: ``import agentgym_trainer_rl`` loads no torch):

* :data:`ALGORITHMS` (name -> advantage estimator) and :class:`EstimatorOptions`;
* :func:`build_batch` (trajectories -> the padded tensors of one update);
* :class:`PolicyModule` (a causal LM, with a value head for PPO) and :func:`apply_lora`;
* :class:`Updater` and :class:`UpdateSettings` (one policy update: losses, clipping, KL, steps);
* :class:`RLConfig` (the ``trainer`` section) and :class:`RLTrainer` (the whole loop).

Everything else in the package is internal and may change.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

#: Public name -> the module (of this package) that defines it.
PUBLIC = {
    "ALGORITHMS": "algorithms", "EstimatorOptions": "algorithms", "build_batch": "batch",
    "PolicyModule": "policy", "apply_lora": "policy", "Updater": "update", "UpdateSettings": "update",
    "RLConfig": "config", "RLTrainer": "trainer",
}

__all__ = ["ALGORITHMS", "EstimatorOptions", "PolicyModule", "RLConfig", "RLTrainer", "UpdateSettings", "Updater",
           "apply_lora", "build_batch"]


def __getattr__(name: str) -> Any:
    if name not in PUBLIC:
        raise AttributeError(f"module 'agentgym_trainer_rl' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{PUBLIC[name]}"), name)
    globals()[name] = value
    return value

"""Base classes of the plugin kinds that core defines (env and engine live in ``env/`` and ``engine.py``,
the trainer and its lifecycle in ``trainer.py``).

Each is deliberately small: a plugin subclasses one and registers its import string. A
component receives its config dataclass fields as keyword arguments.
"""
from __future__ import annotations

from typing import Any

from .trainer import StepResult, Trainer, TrainerConfig

__all__ = ["Backend", "Reward", "Scheduler", "StepResult", "Trainer", "TrainerConfig"]


class Scheduler:
    """Gives the maximum number of interaction turns allowed at a training step.

    ScalingInter-RL is one scheduler: it raises the horizon in stages. Any state that
    changes during training (e.g. the adaptive scheduler's stage) must be in
    :meth:`state_dict`, which is saved in every checkpoint.
    """

    def max_turns(self, step: int) -> int:
        """The horizon (maximum turns per episode) in force at *step* (0-based)."""
        raise NotImplementedError

    def observe(self, step: int, metrics: dict[str, float]) -> None:
        """Called after each step with its metrics (``success_rate``, ...). Default: ignore."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""


class Reward:
    """Maps a finished trajectory to one reward per turn.

    Rewards are composed as a weighted list in the config (``rewards: [{name: success,
    weight: 1.0}, {name: format, weight: 0.1}]``); the trainer attaches turn *i*'s reward to
    the last token the model generated in turn *i*.
    """

    def __call__(self, trajectory: Any) -> list[float]:
        """Return ``len(trajectory.turns)`` floats."""
        raise NotImplementedError

    # Optional: ``score_batch(trajectories)``. A reward that defines it is handed every episode of a
    # training step (or an evaluation) together before it is called on each one (RunParts.score): a
    # model judge batches its calls there, or ranks a GRPO group's episodes against each other.


class Backend:
    """A device family: where tensors live and how processes talk.

    Methods import torch lazily so that listing backends imports nothing heavy.
    """

    name: str = ""
    #: ``torch.distributed`` backend for process groups ("gloo", "nccl", "hccl").
    dist_backend: str = "gloo"

    def is_available(self) -> tuple[bool, str]:
        """``(True, "")`` or ``(False, "one line saying why")``."""
        raise NotImplementedError

    def device(self, local_rank: int = 0) -> str:
        """The torch device string for this process (``"cpu"``, ``"cuda:1"``, ``"npu:0"``)."""
        raise NotImplementedError

    def supports_bf16(self) -> bool:
        return False

    def visible_devices_env(self) -> str | None:
        """The env var that restricts visible devices (``CUDA_VISIBLE_DEVICES``), if any."""
        return None

    def setup(self) -> None:
        """Prepare the process (import vendor modules, set env vars). Default: nothing."""

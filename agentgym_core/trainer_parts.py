"""What core's trainer lifecycle shares with trainer plugins: the lifecycle options, a step's result, the
watchdogs' errors and the TensorBoard log (:mod:`agentgym_core.trainer` holds the lifecycle itself)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .config_schema import check_range
from .errors import AgentGymError


class TrainingDiverged(AgentGymError):
    """The loss stayed non-finite for too many steps in a row."""


class EnvFailing(AgentGymError):
    """Every episode failed on an env error for too many steps in a row."""


@dataclass
class TrainerConfig:
    """The ``trainer`` options of the lifecycle, shared by every trainer (a plugin's ``Config`` extends it)."""

    #: Training steps.
    steps: int = 100
    #: Checkpoint every N steps (0: only at the end); keep the newest K (0: all).
    save_every: int = 10
    keep_checkpoints: int = 2
    #: Stop after this many steps in a row whose updates were all skipped for a non-finite loss.
    max_nonfinite: int = 3
    #: Stop after this many steps in a row in which every episode failed on an env error.
    max_failed_steps: int = 3
    #: Run envs in this process instead of launching env servers.
    local_envs: bool = False
    #: Show the live progress line (main process).
    progress: bool = True
    #: The least ``steps`` a trainer accepts (a trainer that derives its steps from data allows 0).
    min_steps: ClassVar[int] = 1

    def __post_init__(self) -> None:
        parent = getattr(super(), "__post_init__", None)  # the next options class of a trainer's Config
        if parent is not None:
            parent()
        check_range("trainer.steps", self.steps, ge=self.min_steps)
        check_range("trainer.save_every", self.save_every, ge=0, note="0: only at the end")
        check_range("trainer.keep_checkpoints", self.keep_checkpoints, ge=0, note="0: keep all")
        check_range("trainer.max_nonfinite", self.max_nonfinite, ge=1)
        check_range("trainer.max_failed_steps", self.max_failed_steps, ge=1)


@dataclass
class StepResult:
    """What one training step gives the lifecycle."""

    #: The row of ``metrics.jsonl`` (``step`` is 1-based).
    metrics: dict[str, float]
    #: The step's episodes on every process (the env-failure watchdog reads ``failed`` / ``error``).
    trajectories: Sequence[Any] = field(default_factory=list)
    #: False when every update of the step was skipped for a non-finite loss or gradient.
    updated: bool = True


def one_line(text: str, limit: int) -> str:
    """*text* on one line, at most *limit* characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TensorBoardLog:
    """Each step's metrics as TensorBoard scalars in ``run_dir/tb`` (when tensorboard is installed)."""

    def __init__(self, folder: Any) -> None:
        self.folder = folder
        self.writer: Any = None  # made at the first step (a resumed, finished run writes none)

    def log(self, metrics: dict[str, Any]) -> None:
        import math

        if self.writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # torch or tensorboard not installed: metrics.jsonl only
                self.writer = False
            else:
                self.writer = SummaryWriter(str(self.folder))
        if not self.writer:
            return
        for k, v in metrics.items():
            if isinstance(v, (int, float)) and k != "step" and math.isfinite(v):
                self.writer.add_scalar(k, v, int(metrics["step"]))
        self.writer.flush()

    def close(self) -> None:
        if self.writer:
            self.writer.close()

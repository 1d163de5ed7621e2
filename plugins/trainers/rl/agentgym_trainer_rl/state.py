"""What a checkpoint holds besides the weights: the trainer state (optimizer, schedulers, RNGs, task cursor).

The run directory itself (layout, atomic checkpoint folders, ``latest``) is core's
:mod:`agentgym_core.rundir`; the torch part of a checkpoint is written and read by
:mod:`agentgym_hf.training` (shared with the ``sft`` trainer), the task order by
:class:`agentgym_core.cursor.TaskCursor`.
"""
from __future__ import annotations

from agentgym_core import TaskCursor
from agentgym_hf.training import ResumeError, load_trainer_state, rng_state, set_rng_state, write_checkpoint

__all__ = ["ResumeError", "TaskCursor", "load_trainer_state", "rng_state", "set_rng_state", "write_checkpoint"]

"""Base classes of the plugin kinds that core defines (env and engine live in ``env/`` and ``engine.py``).

Each is deliberately small: a plugin subclasses one and registers its import string. A
component receives its config dataclass fields as keyword arguments.
"""
from __future__ import annotations

from typing import Any


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


class Trainer:
    """Runs a whole training job from a resolved run config, and owns its run directory.

    :param config: the resolved run config (``DictConfig``).
    :param manager: the plugin manager, to build the other components by name.
    :param resume: a run directory to continue (``agentgym train --resume``), or None.
    :param options: the ``trainer`` section's own options.

    A subclass calls :meth:`open_run_dir` once, writes through :attr:`run_dir`
    (:class:`~agentgym_core.rundir.RunDir`), records evaluations in :attr:`summary` and fires
    the lifecycle hooks; plots and reports come from plugins listening to those hooks.
    """

    def __init__(self, config: Any, manager: Any, *, resume: Any = None, **options: Any) -> None:
        self.config = config
        self.manager = manager
        self.resume = resume
        self.options = options
        #: Evaluation summaries of this run by tag (``before``, ``after``).
        self.summary: dict[str, Any] = {}
        self.run_dir: Any = None
        #: The checkpoint a resumed run continues from (None: a new run).
        self.checkpoint: Any = None

    def fit(self) -> dict[str, float]:
        """Train; return the final metrics."""
        raise NotImplementedError

    def open_run_dir(self, *, main: bool = True, barrier: Any = None) -> Any:
        """Take the run directory (``run.output_dir/run.name``, or the one being resumed).

        A new run refuses a folder that holds an earlier run unless ``run.overwrite`` (then the
        main process deletes it, after *barrier* lets every process check first) and writes
        ``config.yaml``; a resumed run finds its latest checkpoint (:attr:`checkpoint`).
        """
        import shutil
        import sys
        from pathlib import Path

        from .config import to_yaml
        from .rundir import RunDir, RunDirError

        cfg = self.config
        path = Path(self.resume) if self.resume else Path(cfg.run.output_dir) / cfg.run.name
        if self.resume:
            self.checkpoint = RunDir(path).latest_checkpoint()
            if self.checkpoint is None:
                raise RunDirError(f"--resume {path}: no complete checkpoint under checkpoints/; "
                                  "start a new run without --resume")
        else:
            clear = RunDir(path).check_new_run(bool(cfg.run.get("overwrite", False)))
            if barrier is not None:
                barrier()
            if clear and main:
                shutil.rmtree(path)
                print(f"run.overwrite=true: deleted the earlier run in {path}", file=sys.stderr, flush=True)
        self.run_dir = RunDir(path, writer=main)
        if main and not self.resume:
            self.run_dir.write_config(to_yaml(cfg))
        return self.run_dir

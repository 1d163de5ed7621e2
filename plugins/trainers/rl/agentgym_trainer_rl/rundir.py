"""The run directory: config, metrics (JSONL + TensorBoard), trajectories, atomic checkpoints.

Layout (read by ``agentgym report`` / ``view``)::

    runs/<name>/config.yaml  metrics.jsonl  tb/  trajectories/step_000001.jsonl
                checkpoints/step_000010/  checkpoints/latest  eval/before.json  eval/after.json

File names count steps from 1 (``step_000010`` holds the weights after 10 steps); hooks
receive the 0-based index of the step that just ran.
"""
from __future__ import annotations

import json
import math
import os
import pickle
import random
import shutil
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from agentgym_core.errors import AgentGymError


class ResumeError(AgentGymError):
    """``--resume`` was given a directory without a complete checkpoint."""


class RunDirInUse(AgentGymError):
    """A new run was pointed at a directory that already holds another run."""


def step_name(step: int) -> str:
    return f"step_{step:06d}"


def check_new_run_dir(path: Path, overwrite: bool) -> bool:
    """Refuse to start a new run in *path* when an earlier run left results there.

    A second run would append its metrics to the first one's, skip the "before" evaluation
    and overwrite its checkpoints. Returns True when *path* holds a run that ``run.overwrite``
    says to delete first. A directory with no results (a run that failed while starting) is reused.
    """
    from agentgym_core.runs import is_run_dir

    if not path.exists():
        return False
    if not path.is_dir():
        raise RunDirInUse(f"the run directory {path} is a file; set run.name or run.output_dir to another path")
    held = earlier_run(path)
    if overwrite:
        if not is_run_dir(path) and any(path.iterdir()):
            raise RunDirInUse(
                f"run.overwrite=true would delete {path}, which is not a run directory (no metrics.jsonl, "
                "checkpoints/ or trajectories/); pick another run.name or run.output_dir")
        return is_run_dir(path)
    if held is None:
        return False
    summary, resumable = held
    ways = (f"continue it with `agentgym train --resume {path}`, " if resumable
            else "(it has no checkpoint to --resume from) ")
    raise RunDirInUse(f"{path} already holds a run ({summary}): {ways}start a new run with run.name=NEW, "
                      "or replace it with run.overwrite=true")


def earlier_run(path: Path) -> Optional[tuple[str, bool]]:
    """``("2 steps, checkpoint step_000002", resumable)`` for the results in *path*; None when it has none."""
    steps = 0
    metrics = path / "metrics.jsonl"
    if metrics.is_file():
        for line in metrics.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                steps = max(steps, int(json.loads(line).get("step", 0)))
            except (ValueError, TypeError, AttributeError):
                continue
    ckpt = RunDir(path, main=False).latest_checkpoint()
    results = (steps or ckpt is not None or any((path / "checkpoints").glob("step_*"))
               or any((path / "trajectories").glob("*.jsonl")) or any((path / "eval").glob("*.json")))
    if not results:
        return None
    summary = f"{steps} step{'s' if steps != 1 else ''} logged" if steps else "no steps logged"
    if ckpt is not None:
        summary += f", checkpoint {ckpt.name}"
    return summary, ckpt is not None


class RunDir:
    def __init__(self, path: str | os.PathLike, main: bool = True) -> None:
        self.path = Path(path)
        self.main = main
        self._tb: Any = None
        if main:
            for sub in ("trajectories", "checkpoints", "eval"):
                (self.path / sub).mkdir(parents=True, exist_ok=True)

    # -- metrics -----------------------------------------------------------------------------
    def log(self, metrics: dict[str, float]) -> None:
        if not self.main:
            return
        row = finite_or_null(metrics)
        with open(self.path / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        writer = self.tensorboard()
        if writer is not None:
            for k, v in metrics.items():
                if isinstance(v, (int, float)) and k != "step" and math.isfinite(v):
                    writer.add_scalar(k, v, int(metrics["step"]))
            writer.flush()

    def tensorboard(self) -> Any:
        if self._tb is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard not installed: JSONL only
                self._tb = False
            else:
                self._tb = SummaryWriter(str(self.path / "tb"))
        return self._tb or None

    def truncate_metrics(self, last_step: int) -> None:
        """Drop metric rows after *last_step* (a resumed run redoes them)."""
        p = self.path / "metrics.jsonl"
        if not self.main or not p.exists():
            return
        keep = [line for line in p.read_text().splitlines() if line.strip() and json.loads(line).get("step", 0) <= last_step]
        p.write_text("".join(line + "\n" for line in keep))

    def write_json(self, rel: str, data: Any) -> None:
        if self.main:
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_text(json.dumps(finite_or_null(data), indent=2, default=str))
            os.replace(tmp, target)

    def save_config(self, text: str) -> bool:
        """Write *text* to ``config.yaml`` unless it says the same; the old file goes to ``config.prev.yaml``.

        ``--resume`` reads ``config.yaml``, so overrides given with a resume (``trainer.steps=40``)
        are saved here: a later resume after a crash continues with them. True when it changed
        an existing file.
        """
        target = self.path / "config.yaml"
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old is not None and _plain_config(old) == _plain_config(text):
            return False
        if old is not None:
            (self.path / "config.prev.yaml").write_text(old, encoding="utf-8")
        tmp = target.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
        return old is not None

    def evaluated(self, tag: str, checkpoint: Optional[Path]) -> bool:
        """True when ``eval/<tag>.json`` is the evaluation of *checkpoint* (its ``meta.model``)."""
        path = self.path / "eval" / f"{tag}.json"
        if checkpoint is None or not path.exists():
            return False
        try:
            model = (json.loads(path.read_text(encoding="utf-8")).get("meta") or {}).get("model")
        except (OSError, ValueError, AttributeError):
            return False
        return bool(model) and Path(model).resolve() == Path(checkpoint).resolve()

    def close(self) -> None:
        if self._tb:
            self._tb.close()

    # -- checkpoints -------------------------------------------------------------------------
    def latest_checkpoint(self) -> Optional[Path]:
        p = self.path / "checkpoints" / "latest"
        if not p.exists():
            return None
        ckpt = self.path / "checkpoints" / p.read_text().strip()
        return ckpt if (ckpt / "trainer_state.pt").exists() else None

    def save_checkpoint(self, step: int, model: Any, tokenizer: Any, state: dict[str, Any], keep: int) -> Path:
        """Write ``checkpoints/step_N`` via a temp folder + rename, then point ``latest`` at it."""
        root = self.path / "checkpoints"
        final = root / step_name(step)
        tmp = root / f".tmp-{step_name(step)}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir(parents=True)
            model.save_pretrained(str(tmp), safe_serialization=True)
            if tokenizer is not None:
                tokenizer.save_pretrained(str(tmp))
            torch.save(state, tmp / "trainer_state.pt")
            (tmp / "trainer_state.json").write_text(json.dumps(_jsonable(state), indent=2, default=str))
            _fsync_dir(tmp)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            previous = (root / "latest").read_text().strip() if (root / "latest").exists() else None
            kept = f"the previous checkpoint {root / previous} is intact" if previous else "no earlier checkpoint exists"
            raise CheckpointWriteError(
                f"could not write checkpoint {final}: {exc.strerror or exc} ({type(exc).__name__}); {kept}. "
                f"Free space on {root} (or set run.output_dir to another disk), then resume with "
                f"agentgym train --resume {self.path}"
            ) from exc
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
        latest_tmp = root / ".latest.tmp"
        latest_tmp.write_text(step_name(step) + "\n")
        os.replace(latest_tmp, root / "latest")
        self._prune(root, keep)
        return final

    def _prune(self, root: Path, keep: int) -> None:
        if keep <= 0:
            return
        done = sorted(p for p in root.glob("step_*") if p.is_dir())
        for old in done[:-keep]:
            shutil.rmtree(old, ignore_errors=True)


def checkpoint_step(ckpt: Path) -> Optional[int]:
    """The step a checkpoint was saved after, from its ``trainer_state.json`` (no torch load)."""
    try:
        return int(json.loads((ckpt / "trainer_state.json").read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        name = ckpt.name
        return int(name[5:]) if name.startswith("step_") and name[5:].isdigit() else None


class CheckpointWriteError(AgentGymError):
    """A checkpoint could not be written (disk full, permissions); the previous one is kept."""


def _jsonable(state: dict[str, Any]) -> dict[str, Any]:
    """The human-readable part of the trainer state (no tensors), valid JSON (NaN -> null)."""
    return finite_or_null({k: v for k, v in state.items()
                           if k not in ("optimizer", "lr_scheduler", "rng", "value_head", "ref")})


def finite_or_null(value: Any) -> Any:
    """*value* with every NaN/inf float, however deeply nested, replaced by None.

    ``json.dumps`` would write them as ``NaN``/``Infinity``, which is not JSON: other tools'
    parsers (``JSON.parse``, ``jq``) reject the whole file.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value


def _plain_config(text: str) -> Any:
    """A config.yaml's data, with a redacted env token read as unset (as ``--resume`` reads it)."""
    import yaml

    from agentgym_core.config import REDACTED

    data = yaml.safe_load(text) or {}
    if isinstance(data, dict) and isinstance(data.get("env"), dict) and data["env"].get("token") == REDACTED:
        data["env"]["token"] = None
    return data


def _fsync_dir(path: Path) -> None:
    for f in path.iterdir():
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())


def rng_state() -> dict[str, Any]:
    """The RNG states as tensors and plain Python values, so ``torch.load(weights_only=True)`` reads them."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"python": random.getstate(), "numpy": (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss),
            "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])


def load_trainer_state(path: Path) -> dict[str, Any]:
    """Read ``trainer_state.pt`` with tensors and plain values only: a checkpoint cannot run code."""
    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        why = next((line.strip() for line in str(exc).splitlines() if "Unsupported global" in line), "")
        raise ResumeError(
            f"{path} holds objects other than tensors and plain values, which resume refuses to unpickle "
            f"(loading them could run arbitrary code){': ' + why[:200] if why else ''}. A checkpoint written by "
            "this version of AgentGym never does; start a fresh run, or load the model weights from the "
            "checkpoint folder with transformers"
        ) from None


class TaskCursor:
    """Training task ids in a seeded shuffled order, epoch after epoch; its state resumes exactly."""

    def __init__(self, ids: list[int], seed: int) -> None:
        if not ids:
            raise AgentGymError("the env's train split is empty: nothing to train on")
        self.ids, self.seed, self.epoch, self.index = list(ids), seed, 0, 0
        self._order = self._shuffle()

    def _shuffle(self) -> list[int]:
        order = list(self.ids)
        random.Random(self.seed * 1_000_003 + self.epoch).shuffle(order)
        return order

    def take(self, n: int) -> list[int]:
        out = []
        while len(out) < n:
            if self.index >= len(self._order):
                self.epoch, self.index = self.epoch + 1, 0
                self._order = self._shuffle()
            out.append(self._order[self.index])
            self.index += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        self._order = self._shuffle()

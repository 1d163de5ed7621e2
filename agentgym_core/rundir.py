"""The run directory: the one module that writes a run and reads it back.

Layout::

    runs/<name>/config.yaml  config.prev.yaml  metrics.jsonl  tb/  plots/  report.html
                trajectories/step_000001.jsonl  eval/before.json  eval/after.json
                checkpoints/step_000010/  checkpoints/latest

File names count steps from 1 (``step_000010`` holds the weights after 10 steps); hooks
receive the 0-based index of the step that just ran. A checkpoint is written into a temp
folder and renamed into place, then ``checkpoints/latest`` (a file naming it) is replaced:
a ``step_*`` folder is always complete. The trainer base class
(:class:`~agentgym_core.components.Trainer`) owns the run directory of a training run;
``agentgym eval``, ``report`` and ``view`` read it through this module. No torch here: what
goes into a checkpoint folder is the trainer's business (:meth:`RunDir.save_checkpoint`).
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .config_schema import REDACTED
from .errors import AgentGymError
from .rollout.trajectory import dump_trajectories as write_trajectories


class RunDirError(AgentGymError):
    """A path is not a run directory, or lacks what a command needs."""


class RunDirInUse(AgentGymError):
    """A new run was pointed at a directory that already holds another run."""


class CheckpointWriteError(AgentGymError):
    """A checkpoint could not be written (disk full, permissions); the previous one is kept."""


_STEP_RE = re.compile(r"step_(\d+)")
_SUBDIRS = ("trajectories", "checkpoints", "eval")


def step_name(step: int) -> str:
    return f"step_{step:06d}"


def step_of(name: str | os.PathLike) -> int | None:
    """``step_000010`` (also as a path or ``.jsonl`` file) -> 10; anything else (``.tmp-step_000010``) -> None."""
    base = Path(name).name
    m = _STEP_RE.fullmatch(base[: -len(".jsonl")] if base.endswith(".jsonl") else base)
    return int(m.group(1)) if m else None


def is_run_dir(path: str | os.PathLike) -> bool:
    """True when *path* is a run directory (a training run's results), not a bare model folder."""
    p = Path(path)
    return p.is_dir() and any((p / name).exists() for name in ("metrics.jsonl", "checkpoints", "trajectories"))


class RunDir:
    """A run directory. ``RunDir(path)`` reads; ``RunDir(path, writer=True)`` also creates its folders.

    In a multi-process run only the main process is the writer; the others read (which
    checkpoint to resume from) and every write method is a no-op for them.
    """

    def __init__(self, path: str | os.PathLike, *, writer: bool = False) -> None:
        self.path = Path(path)
        self.writer = writer
        if writer:
            for sub in _SUBDIRS:
                (self.path / sub).mkdir(parents=True, exist_ok=True)

    @classmethod
    def open(cls, path: str | os.PathLike) -> "RunDir":
        """An existing run directory to read; a clear error when *path* is none."""
        p = Path(path)
        if not p.is_dir():
            raise RunDirError(f"run directory {str(p)!r} does not exist; pass runs/<name> of a training run")
        return cls(p)

    @property
    def name(self) -> str:
        return self.path.resolve().name

    # -- config ------------------------------------------------------------------------------
    def config_text(self) -> str:
        p = self.path / "config.yaml"
        return p.read_text(encoding="utf-8") if p.is_file() else ""

    def config(self) -> dict[str, Any]:
        """``config.yaml`` as a plain dict ({} when missing or unreadable)."""
        import yaml

        try:
            data = yaml.safe_load(self.config_text()) or {}
        except yaml.YAMLError:
            return {}
        return data if isinstance(data, dict) else {}

    def write_config(self, text: str) -> None:
        """Write ``config.yaml`` of a new run."""
        if self.writer:
            _atomic_write(self.path / "config.yaml", text)

    def save_config(self, text: str) -> bool:
        """Write *text* to ``config.yaml`` unless it says the same; the old file goes to ``config.prev.yaml``.

        ``--resume`` reads ``config.yaml``, so overrides given with a resume (``trainer.steps=40``)
        are saved here: a later resume after a crash continues with them. True when it changed
        an existing file.
        """
        if not self.writer:
            return False
        target = self.path / "config.yaml"
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old is not None and _plain_config(old) == _plain_config(text):
            return False
        if old is not None:
            (self.path / "config.prev.yaml").write_text(old, encoding="utf-8")
        _atomic_write(target, text)
        return old is not None

    # -- metrics -----------------------------------------------------------------------------
    def log(self, metrics: dict[str, Any]) -> None:
        """Append one row to ``metrics.jsonl`` (NaN/inf written as null)."""
        if not self.writer:
            return
        with open(self.path / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(finite_or_null(metrics)) + "\n")

    def metrics(self) -> list[dict[str, Any]]:
        """Rows of ``metrics.jsonl`` in file order (unparseable lines are skipped)."""
        p = self.path / "metrics.jsonl"
        rows: list[dict[str, Any]] = []
        if not p.is_file():
            return rows
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
        return rows

    def truncate_metrics(self, last_step: int) -> None:
        """Drop metric rows after *last_step* (a resumed run redoes them)."""
        p = self.path / "metrics.jsonl"
        if not self.writer or not p.exists():
            return
        keep = [json.dumps(row) for row in self.metrics() if int(row.get("step", 0) or 0) <= last_step]
        p.write_text("".join(line + "\n" for line in keep), encoding="utf-8")

    # -- evaluations -------------------------------------------------------------------------
    def write_json(self, rel: str, data: Any) -> None:
        if self.writer:
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(target, json.dumps(finite_or_null(data), indent=2, default=str))

    def eval_results(self) -> dict[str, dict[str, Any]]:
        """``{"before": summary, "after": summary, ...}`` from ``eval/*.json`` (before, after, then by name)."""
        out: dict[str, dict[str, Any]] = {}
        d = self.path / "eval"
        if not d.is_dir():
            return out
        for p in sorted(d.glob("*.json"), key=lambda p: (p.stem != "before", p.stem != "after", p.stem)):
            summary = load_summary(p)
            if summary is not None:
                out[p.stem] = summary
        return out

    def evaluated(self, tag: str, checkpoint: Path | None) -> bool:
        """True when ``eval/<tag>.json`` is the evaluation of *checkpoint* (its ``meta.model``)."""
        if checkpoint is None:
            return False
        summary = load_summary(self.path / "eval" / f"{tag}.json")
        model = ((summary or {}).get("meta") or {}).get("model")
        return bool(model) and Path(model).resolve() == Path(checkpoint).resolve()

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        """Complete checkpoint folders, oldest first."""
        d = self.path / "checkpoints"
        if not d.is_dir():
            return []
        found = [p for p in d.iterdir() if p.is_dir() and not p.is_symlink() and step_of(p.name) is not None]
        return sorted(found, key=lambda p: step_of(p.name) or 0)

    def latest_checkpoint(self) -> Path | None:
        """The checkpoint ``checkpoints/latest`` names (a file, or a link/folder), else the newest one; None if none."""
        d = self.path / "checkpoints"
        latest = d / "latest"
        if latest.is_dir():
            return latest.resolve()
        if latest.is_file():
            target = latest.read_text(encoding="utf-8").strip()
            cand = Path(target) if os.path.isabs(target) else d / target
            if cand.is_dir() and step_of(cand.name) is not None:
                return cand
        found = self.checkpoints()
        return found[-1] if found else None

    def require_checkpoint(self) -> Path:
        """:meth:`latest_checkpoint`, or an error saying how to get one."""
        ckpt = self.latest_checkpoint()
        if ckpt is None:
            raise RunDirError(
                f"run {str(self.path)!r} has no checkpoint under checkpoints/; train longer (checkpoints are "
                "written every trainer.save_every steps and at the end) or pass a model folder")
        return ckpt

    def save_checkpoint(self, step: int, write: Callable[[Path], None], keep: int = 0) -> Path:
        """Write ``checkpoints/step_N``: *write* fills a temp folder, which is renamed into place; then
        ``latest`` names it and all but the newest *keep* are removed (0: keep all)."""
        tmp = self.checkpoint_tmp(step, create=True)
        try:
            write(tmp)
        except OSError as exc:
            raise self._write_error(step, tmp, exc) from exc
        return self.commit_checkpoint(step, keep)

    def checkpoint_tmp(self, step: int, *, create: bool) -> Path:
        """The temp folder checkpoint *step* is written into before :meth:`commit_checkpoint` renames it.

        Several processes may write into it (a sharded checkpoint): the writer creates it
        (*create*), the others get its path once the writer has.
        """
        tmp = self.path / "checkpoints" / f".tmp-{step_name(step)}"
        if create:
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                tmp.mkdir(parents=True)
            except OSError as exc:
                raise self._write_error(step, tmp, exc) from exc
        return tmp

    def commit_checkpoint(self, step: int, keep: int = 0) -> Path:
        """Rename the filled temp folder of *step* into place, point ``latest`` at it, prune old ones."""
        root = self.path / "checkpoints"
        final, tmp = root / step_name(step), self.checkpoint_tmp(step, create=False)
        try:
            _fsync_files(tmp)
        except OSError as exc:
            raise self._write_error(step, tmp, exc) from exc
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
        _atomic_write(root / "latest", step_name(step) + "\n")
        if keep > 0:
            for old in self.checkpoints()[:-keep]:
                shutil.rmtree(old, ignore_errors=True)
        return final

    def _write_error(self, step: int, tmp: Path, exc: OSError) -> CheckpointWriteError:
        shutil.rmtree(tmp, ignore_errors=True)
        final = self.path / "checkpoints" / step_name(step)
        previous = self.latest_checkpoint()
        kept = f"the previous checkpoint {previous} is intact" if previous else "no earlier checkpoint exists"
        return CheckpointWriteError(
            f"could not write checkpoint {final}: {exc.strerror or exc} ({type(exc).__name__}); {kept}. "
            f"Free space on {final.parent} (or set run.output_dir to another disk), then resume with "
            f"agentgym train --resume {self.path}")

    # -- trajectories ------------------------------------------------------------------------
    def dump_trajectories(self, trajectories: Sequence[Any], step: int) -> Path | None:
        """Write a step's episodes as ``trajectories/step_N.jsonl``."""
        if not self.writer:
            return None
        return write_trajectories(trajectories, self.path / "trajectories", step)

    def trajectory_files(self) -> list[str]:
        """Keys of trajectory files: ``trajectories/step_000001`` ..., then eval dumps, by step."""
        keys = []
        for sub in ("trajectories", "eval"):
            d = self.path / sub
            if d.is_dir():
                keys += [f"{sub}/{p.stem}" for p in d.glob("*.jsonl") if p.is_file()]
        return sorted(keys, key=lambda k: (not k.startswith("trajectories/"), step_of(k) is None, step_of(k) or 0, k))

    # -- a new run in an old folder ------------------------------------------------------------
    def earlier_run(self) -> tuple[str, bool] | None:
        """``("2 steps logged, checkpoint step_000002", resumable)`` for results here; None when there are none."""
        steps = max((int(r.get("step", 0) or 0) for r in self.metrics() if isinstance(r.get("step"), (int, float))),
                    default=0)
        ckpt = self.latest_checkpoint()
        results = (steps or ckpt is not None or any((self.path / "trajectories").glob("*.jsonl"))
                   or any((self.path / "eval").glob("*.json")))
        if not results:
            return None
        summary = f"{steps} step{'s' if steps != 1 else ''} logged" if steps else "no steps logged"
        if ckpt is not None:
            summary += f", checkpoint {ckpt.name}"
        return summary, ckpt is not None

    def check_new_run(self, overwrite: bool) -> bool:
        """Refuse to start a new run here when an earlier run left results (a second run would append
        its metrics, skip the "before" evaluation and overwrite checkpoints). True when the folder
        holds a run that ``run.overwrite`` says to delete first; a folder without results is reused."""
        path = self.path
        if not path.exists():
            return False
        if not path.is_dir():
            raise RunDirInUse(f"the run directory {path} is a file; set run.name or run.output_dir to another path")
        if overwrite:
            if not is_run_dir(path) and any(path.iterdir()):
                raise RunDirInUse(
                    f"run.overwrite=true would delete {path}, which is not a run directory (no metrics.jsonl, "
                    "checkpoints/ or trajectories/); pick another run.name or run.output_dir")
            return is_run_dir(path)
        held = self.earlier_run()
        if held is None:
            return False
        summary, resumable = held
        ways = (f"continue it with `agentgym train --resume {path}`, " if resumable
                else "(it has no checkpoint to --resume from) ")
        raise RunDirInUse(f"{path} already holds a run ({summary}): {ways}start a new run with run.name=NEW, "
                          "or replace it with run.overwrite=true")


def checkpoint_step(ckpt: Path) -> int | None:
    """The step a checkpoint was saved after (its ``trainer_state.json``, else its name)."""
    try:
        return int(json.loads((Path(ckpt) / "trainer_state.json").read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return step_of(Path(ckpt).name)


def load_summary(path: str | os.PathLike) -> dict[str, Any] | None:
    """An evaluation summary from JSON (ours, or wrapped as ``{"summary": ...}``); None if not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and "overall" not in data and isinstance(data.get("summary"), dict):
        data = data["summary"]
    if not isinstance(data, dict) or "overall" not in data:
        return None
    return data


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


def _atomic_write(target: Path, text: str) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def _plain_config(text: str) -> Any:
    """A config.yaml's data, with a redacted env token read as unset (as ``--resume`` reads it)."""
    import yaml

    data = yaml.safe_load(text) or {}
    if isinstance(data, dict) and isinstance(data.get("env"), dict) and data["env"].get("token") == REDACTED:
        data["env"]["token"] = None
    return data


def _fsync_files(path: Path) -> None:
    for f in path.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())

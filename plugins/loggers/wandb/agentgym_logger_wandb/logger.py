"""One W&B run per training run, written into the run directory (``runs/<name>/wandb/``).

Active when ``wandb`` is importable, unless ``AGENTGYM_WANDB=0``; ``AGENTGYM_WANDB=1``
without wandb warns once per run. With neither ``WANDB_MODE`` nor ``WANDB_API_KEY`` set, the
run is logged offline (no network; ``wandb sync runs/<name>/wandb/offline-run-*`` uploads it
later). Logging must never end a training run: a W&B error becomes one warning and the
logger stops for that run.
"""
from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import Any

#: run directory -> the wandb Run object of a run in progress.
_RUNS: dict[str, Any] = {}


def enabled() -> bool:
    """Whether this process logs to W&B (see the module docstring)."""
    flag = os.environ.get("AGENTGYM_WANDB", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return False
    try:
        import wandb  # noqa: F401
    except ImportError:
        if flag:
            warnings.warn("AGENTGYM_WANDB is set but wandb is not installed: pip install wandb "
                          "(or pip install 'agentgym-logger-wandb[wandb]'); this run is not logged to W&B",
                          stacklevel=2)
        return False
    return True


def mode() -> str:
    """``WANDB_MODE`` if set, else ``online`` with an API key in the environment and ``offline`` without."""
    return os.environ.get("WANDB_MODE") or ("online" if os.environ.get("WANDB_API_KEY") else "offline")


def _plain_config(config: Any) -> dict[str, Any]:
    """The resolved config as plain data, with the env token redacted (as config.yaml has it)."""
    import yaml

    from agentgym_core import to_yaml

    try:
        return yaml.safe_load(to_yaml(config, redact=True)) or {}
    except Exception:  # noqa: BLE001 - a config that is not an OmegaConf one: log what we can
        return dict(config) if isinstance(config, dict) else {}


def _numbers(metrics: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Finite numbers of a (nested) dict, flattened as ``a/b`` keys."""
    out: dict[str, float] = {}
    for key, value in (metrics or {}).items():
        if isinstance(value, dict):
            out.update(_numbers(value, f"{prefix}{key}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[f"{prefix}{key}"] = float(value)
    return out


def _guard(run_dir: str, what: str, fn: Any) -> None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        warnings.warn(f"W&B logging stopped for {run_dir} ({what} failed: {type(exc).__name__}: {exc})", stacklevel=3)
        run = _RUNS.pop(str(run_dir), None)
        if run is not None:
            try:
                run.finish(exit_code=1)
            except Exception:  # noqa: BLE001
                pass


def start(run_dir: str, config: Any) -> None:
    if not enabled():
        return

    def go() -> None:
        import wandb

        path = Path(run_dir)
        _RUNS[str(run_dir)] = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "agentgym"), name=path.resolve().name, dir=str(path),
            config=_plain_config(config), mode=mode(), reinit="create_new",
            settings=wandb.Settings(console="off", silent=True, x_disable_stats=True))

    _guard(run_dir, "wandb.init", go)


def log_step(run_dir: str, step: int, metrics: dict[str, Any]) -> None:
    """Log a step's metrics at the step number of ``metrics.jsonl`` (``step`` hooks are 0-based)."""
    run = _RUNS.get(str(run_dir))
    if run is not None:
        _guard(run_dir, "wandb.log", lambda: run.log(_numbers(metrics), step=int(step) + 1))


def finish(run_dir: str, metrics: dict[str, Any], status: str) -> None:
    """Put the final metrics (evaluations included) into the run's summary and close it."""
    run = _RUNS.get(str(run_dir))
    if run is None:
        return

    def go() -> None:
        from agentgym_core import RunDir

        evals = {f"eval/{tag}": s.get("overall") or {} for tag, s in RunDir(run_dir).eval_results().items()}
        run.summary.update({**_numbers(metrics), **_numbers(evals), "status": status})
        run.finish(exit_code=0 if status == "completed" else 1)
        _RUNS.pop(str(run_dir), None)

    _guard(run_dir, "wandb.finish", go)

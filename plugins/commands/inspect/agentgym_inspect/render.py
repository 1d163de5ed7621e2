"""What a training run gets drawn as it goes: PNG curves at every checkpoint, the report at the end."""
from __future__ import annotations

import warnings
from typing import Any


def render_run(run_dir: Any, report: bool = False) -> None:
    """PNG curves (and, with *report*, the HTML/Markdown report) into *run_dir*.

    A plotting failure must never end a training run: it is reported as a warning and
    training goes on.
    """
    try:
        from .plots import render_plots

        render_plots(run_dir)
        if report:
            from .report import write_report

            write_report(run_dir, render=False)
    except Exception as exc:  # noqa: BLE001
        warnings.warn(f"could not render plots/report in {run_dir}: {type(exc).__name__}: {exc}", stacklevel=2)

"""What a finished training run says, the same from ``agentgym train`` and ``LLMAgent.train``: its
held-out success before and after, and where the run is with what to do next."""
from __future__ import annotations

import os
from typing import Any


def finish_lines(summary: dict[str, Any] | None, run_dir: str, manager: Any) -> list[str]:
    """The held-out success lines of the trainer's *summary* (``before``/``after`` evaluations), then
    :func:`closing_line` for *run_dir*."""
    lines = []
    for tag in ("before", "after"):
        s = (summary or {}).get(tag)
        if s:
            row = s["overall"]
            lines.append(f"held-out success {tag:>6}: {row['success_rate']:.3f} ({row['n']} episodes, "
                         f"mean turns {row['turns_mean']:.1f})")
    return [*lines, closing_line(os.path.abspath(run_dir), manager)]


def closing_line(run_dir: str, manager: Any) -> str:
    """Where the run is and what to do with it: ``agentgym report|view`` where those commands are
    installed, else that there are no plots and no report, and how to get them."""
    short = short_path(run_dir)
    looking = [name for name in ("report", "view") if name in manager.registry("commands")]
    if looking:
        return f"run: {run_dir} (agentgym {'|'.join(looking)} {short}, agentgym eval --model {short})"
    from .catalogue import provider_of
    from .registry import provider_hint

    provider = provider_of("commands", "report")
    how = provider_hint("command", "report", provider.name) if provider else "A plugin providing `report` is missing."
    return (f"run: {run_dir} (agentgym eval --model {short}); no plots and no report.html were written, they come "
            f"with the `report` command. {how} Then `agentgym report {short}` writes them for this run.")


def short_path(path: str) -> str:
    """*path* relative to the current directory when it lies under it (what a user would type)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel

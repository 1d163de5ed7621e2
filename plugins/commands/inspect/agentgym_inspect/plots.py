"""Training curves as PNG files in ``run_dir/plots/`` (matplotlib, headless, imported lazily).

Uses matplotlib's object API with the Agg canvas directly (no pyplot, no global backend
switch), so it is safe to call from the trainer at every checkpoint, in any thread.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agentgym_core import AgentGymError

#: file stem -> (title, y label, [(metric, legend label)]). ``turns`` also draws the horizon.
CURVES: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "reward": ("Mean episode reward", "reward", [("reward_mean", "reward (mean)")]),
    "success": ("Success rate", "success rate", [("success_rate", "success rate")]),
    "turns": ("Turns per episode and the scheduler's horizon", "turns", [("turns_mean", "mean turns"), ("turns_max", "max turns")]),
    "kl": ("KL divergence to the reference policy", "KL", [("kl", "KL")]),
    "entropy": ("Policy entropy", "entropy (nats/token)", [("entropy", "entropy")]),
    "tokens_per_s": ("Generation throughput", "tokens / s", [("tokens_per_s", "tokens/s")]),
    "loss": ("Training loss", "loss", [("loss", "loss")]),
}


def _series(rows: list[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for i, row in enumerate(rows):
        value = row.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            xs.append(float(row.get("step", i)))
            ys.append(float(value))
    return xs, ys


def _moving_average(ys: list[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, y in enumerate(ys):
        total += y
        if i >= window:
            total -= ys[i - window]
        out.append(total / min(i + 1, window))
    return out


def _figure() -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise AgentGymError(
            "plots need matplotlib (a requirement of agentgym-inspect), which is not installed; run: pip install matplotlib"
        ) from None
    fig = Figure(figsize=(7, 4), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def render_curve(rows: list[dict[str, Any]], stem: str, path: Path, evals: dict[str, Any] | None = None) -> bool:
    """Draw one curve of :data:`CURVES` into *path*; False (nothing written) when it has no data."""
    title, ylabel, metrics = CURVES[stem]
    data = [(label, *_series(rows, key)) for key, label in metrics]
    horizon = _series(rows, "horizon") if stem == "turns" else ([], [])
    empty = not any(xs for _, xs, _ in data) and not horizon[0]
    if empty and not any(key in row for row in rows for key, _ in metrics):
        return False  # never logged: no file
    fig = _figure()
    ax = fig.add_subplot()
    if empty:  # logged but never a number, e.g. KL without a reference policy
        ax.text(0.5, 0.5, f"{metrics[0][0]} was logged as null at every step\n(not computed in this run)",
                ha="center", va="center", transform=ax.transAxes, fontsize=11, color="0.4")
    for label, xs, ys in data:
        if not xs:
            continue
        marker = "o" if len(xs) <= 30 else None
        if len(xs) > 20 and stem in ("reward", "success", "loss", "kl", "entropy"):
            ax.plot(xs, ys, color="C0", alpha=0.3, linewidth=1, label=f"{label} (per step)")
            window = max(2, len(xs) // 20)
            ax.plot(xs, _moving_average(ys, window), color="C0", linewidth=2, label=f"{label} (moving avg, {window} steps)")
        else:
            ax.plot(xs, ys, marker=marker, markersize=3, linewidth=1.5, label=label)
    if stem == "turns":
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if horizon[0]:
        ax.step(horizon[0], horizon[1], where="post", color="C3", linestyle="--", linewidth=2, label="horizon (max turns)")
        ax.set_ylim(bottom=0, top=max(horizon[1] + [y for _, _, ys in data for y in ys]) * 1.1 + 0.5)
    if stem == "success":
        ax.set_ylim(-0.02, 1.02)
        for i, (name, summary) in enumerate((evals or {}).items()):
            value = ((summary or {}).get("overall") or {}).get("success_rate")
            if value is not None:
                ax.axhline(value, color=f"C{i + 1}", linestyle=":", linewidth=1.5, label=f"eval {name}: {100 * value:.0f}%")
    ax.set_title(title)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if not empty:
        ax.legend(loc="best", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format="png")
    tmp.replace(path)  # atomic: a viewer/report never reads half a PNG
    return True


def render_plots(run_dir: str | Path) -> list[Path]:
    """Render every curve with data from ``run_dir/metrics.jsonl`` into ``run_dir/plots/*.png``.

    Returns the written paths. A metric never logged gets no file; one logged only as null
    (KL without a reference policy) gets a plot that says so. Called by the
    trainer at each checkpoint and at the end, and by ``agentgym report``.
    """
    from .runs import Run

    run = Run(run_dir)
    rows = run.metrics()
    evals = run.eval_results()
    out = []
    for stem in CURVES:
        path = run.path / "plots" / f"{stem}.png"
        if render_curve(rows, stem, path, evals):
            out.append(path)
    return out

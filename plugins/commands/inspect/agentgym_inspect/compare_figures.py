"""The figures of :mod:`.compare`: every metric over steps and over wall time, each group of seeds as
its mean with a band from the lowest to the highest seed, and ``overview.png`` with six panels."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .compare import AXES, METRICS, OVERVIEW, Group, RunData, _number, aggregate, series


def _smooth(ys: list[float], window: int) -> list[float]:
    """Trailing moving average over the finite values of the last *window* points; gaps stay gaps."""
    if window <= 1:
        return ys
    out = []
    for i, y in enumerate(ys):
        recent = [v for v in ys[max(0, i - window + 1): i + 1] if not math.isnan(v)]
        out.append(y if math.isnan(y) else sum(recent) / len(recent))
    return out


# -- drawing -----------------------------------------------------------------------------------
def _draw(ax: Any, groups: list[Group], stem: str, axis: str, smooth: int) -> bool:
    """One panel; False when no group has a number for the metric."""
    title, ylabel, metric = METRICS[stem]
    drawn = False
    for i, g in enumerate(groups):
        color = f"C{i % 10}"
        agg = aggregate(g, metric, axis)
        if not any(agg["n"]):
            continue
        drawn = True
        mean, lo, hi = (_smooth(agg[k], smooth) for k in ("mean", "min", "max"))
        seeds = len(g.runs)
        label = g.label + (f" (mean of {seeds} seeds)" if seeds > 1 else "")
        if stem == "horizon":
            ax.step(agg["x"], mean, where="post", color=color, linewidth=2, label=label)
        else:
            marker = "o" if len(agg["x"]) <= 30 else None
            ax.plot(agg["x"], mean, color=color, linewidth=2, marker=marker, markersize=3, label=label)
        if seeds > 1 and stem != "horizon":
            ax.fill_between(agg["x"], lo, hi, color=color, alpha=0.2, linewidth=0)
        if seeds == 1 and stem in ("success", "reward"):  # steps that lost episodes to env failures
            bad = [(x, y) for x, y, row in _with_rows(g.runs[0], metric, axis)
                   if (_number(row.get("env_failures")) or 0) > 0]
            if bad:
                ax.plot([x for x, _ in bad], [y for _, y in bad], "x", color=color, markersize=7,
                        label=f"{g.label}: steps with env failures")
    ax.set_title(title if axis == "step" else f"{title} vs wall time", fontsize=10)
    ax.set_xlabel(AXES[axis])
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if stem == "success":
        ax.set_ylim(-0.02, 1.02)
    if drawn:
        ax.legend(loc="best", fontsize=7)
    else:
        ax.text(0.5, 0.5, f"no run logged {metric}", ha="center", va="center", transform=ax.transAxes, color="0.4")
    return drawn


def _with_rows(run: RunData, metric: str, axis: str) -> list[tuple[float, float, dict[str, Any]]]:
    xs, ys = series(run, metric, axis)
    rows = [r for r in run.rows if _number(r.get(metric)) is not None]
    return list(zip(xs, ys, rows))


def save_png(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format="png")
    tmp.replace(path)


def render_figures(groups: list[Group], out: Path, *, smooth: int = 1) -> list[Path]:
    """``<metric>_vs_step.png`` and ``<metric>_vs_time.png`` for every metric some run logged, and
    ``overview.png`` (six panels); returns the paths written."""
    from .plots import _figure

    written = []
    for stem in METRICS:
        for axis in AXES:
            fig = _figure()
            if _draw(fig.add_subplot(), groups, stem, axis, smooth):
                path = out / f"{stem}_vs_{axis}.png"
                save_png(fig, path)
                written.append(path)
    fig = _figure()
    fig.set_size_inches(15, 8.5)
    axes = fig.subplots(2, 3)
    for ax, (stem, axis) in zip(axes.flat, OVERVIEW):
        _draw(ax, groups, stem, axis, smooth)
    path = out / "overview.png"
    save_png(fig, path)
    return [path, *written]

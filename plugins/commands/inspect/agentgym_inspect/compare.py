"""Several runs side by side: overlaid curves (PNG), one HTML page, a table of their evaluations (and of
their judged scores, with ``judged.png``, when a model judge scored them: :mod:`agentgym_inspect.judged`).

Runs whose ``config.yaml`` are equal except for ``run.name``, ``run.seed``,
``run.output_dir`` and ``run.overwrite`` are seeds of one experiment: they are drawn as one
curve, the mean over the seeds with a band from the lowest to the highest seed. A run that
stopped early, or a step with no number (a step whose episodes all failed logs null losses),
simply contributes nothing at that step, so runs of different lengths compare without
padding. Drawing uses matplotlib's Agg canvas directly, as :mod:`agentgym_inspect.plots`.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym_core.evaluation import markdown_table

from .judged import judged_data, judged_figure, judged_table
from .runs import Run, RunDirError, is_run_dir

#: Keys of ``run`` that only say where a run goes or which seed it draws: not part of the experiment.
IGNORED_RUN_KEYS = ("name", "seed", "output_dir", "overwrite")

#: file stem -> (title, y label, metric). ``horizon`` is drawn as a step line.
METRICS: dict[str, tuple[str, str, str]] = {
    "success": ("Training success rate", "success rate", "success_rate"),
    "reward": ("Mean episode reward", "reward", "reward_mean"),
    "turns": ("Mean turns per episode", "turns", "turns_mean"),
    "horizon": ("Horizon (the scheduler's max turns)", "max turns", "horizon"),
    "tokens_per_s": ("Throughput", "episode tokens / s", "tokens_per_s"),
}
#: x axes: file suffix -> label. Wall time is the running sum of each run's ``step_time_s``.
AXES = {"step": "training step", "time": "wall time of training steps (min)"}
#: The panels of ``overview.png`` (metric, axis), for a document or a slide.
OVERVIEW = (("success", "step"), ("reward", "step"), ("turns", "step"),
            ("horizon", "step"), ("success", "time"), ("tokens_per_s", "step"))


@dataclass
class RunData:
    """What the comparison reads from one run directory."""

    path: Path
    name: str
    seed: Any
    config: dict[str, Any]
    rows: list[dict[str, Any]]
    evals: dict[str, dict[str, Any]]

    @property
    def steps(self) -> int:
        return max((int(r["step"]) for r in self.rows if _number(r.get("step"))), default=0)

    @property
    def failed_steps(self) -> int:
        return sum(1 for r in self.rows if (_number(r.get("env_failures")) or 0) > 0)

    @property
    def train_seconds(self) -> float:
        return sum(_number(r.get("step_time_s")) or 0.0 for r in self.rows)


@dataclass
class Group:
    """Runs of one experiment (equal configs but for the seed); drawn as one curve."""

    label: str
    runs: list[RunData] = field(default_factory=list)


def _number(value: Any) -> float | None:
    """A finite float, else None (null, NaN, inf, strings, booleans)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def load_run(path: str | Path) -> RunData:
    """Read one run directory; a clear error when *path* is none."""
    p = Path(path)
    if not is_run_dir(p):
        raise RunDirError(f"{str(p)!r} is not a run directory (no metrics.jsonl, checkpoints/ or trajectories/); "
                          "pass runs/<name> of a training run")
    run = Run(p)
    config = run.config()
    return RunData(path=run.path, name=run.name, seed=(config.get("run") or {}).get("seed"), config=config,
                   rows=run.metrics(), evals=run.eval_results())


def experiment_key(config: dict[str, Any]) -> str:
    """The config without what differs between seeds of one experiment, as canonical JSON."""
    data = dict(config)
    data["run"] = {k: v for k, v in (config.get("run") or {}).items() if k not in IGNORED_RUN_KEYS}
    return json.dumps(data, sort_keys=True, default=str)


_SEED_PART = re.compile(r"-s\d+(?=-|$)")


def group_runs(runs: list[RunData], *, by_seed: bool = True) -> list[Group]:
    """Groups in order of first appearance; each run alone when *by_seed* is False.

    A group's label is its runs' name with the seed part (``-s<seed>``, how ``agentgym train
    --seeds`` names runs) taken out, or their common prefix; labels that still collide get
    the keys where their configs differ.
    """
    groups: dict[str, Group] = {}
    for run in runs:
        key = experiment_key(run.config) if by_seed else str(run.path)
        groups.setdefault(key, Group(label="")).runs.append(run)
    out = list(groups.values())
    for g in out:
        names = [_SEED_PART.sub("", r.name) or r.name for r in g.runs] if by_seed else [g.runs[0].name]
        g.label = names[0] if len(set(names)) == 1 else (os.path.commonprefix(names).rstrip("-_ ") or g.runs[0].name)
    labels = [g.label for g in out]
    for i, g in enumerate(out):
        if labels.count(labels[i]) > 1:
            others = [o.runs[0].config for j, o in enumerate(out) if j != i and labels[j] == labels[i]]
            diff = _differences(g.runs[0].config, others)
            g.label = f"{labels[i]} ({diff or 'seed ' + str(g.runs[0].seed)})"
    return out


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def _differences(config: dict[str, Any], others: list[dict[str, Any]], limit: int = 3) -> str:
    """``key=value`` of *config* where it differs from each of *others* (the run section aside)."""
    mine = {k: v for k, v in _flatten(config).items() if not k.startswith("run.")}
    keys: list[str] = []
    for other in others:
        theirs = {k: v for k, v in _flatten(other).items() if not k.startswith("run.")}
        keys += [k for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k) and k not in keys]
    shown = [f"{k}={json.dumps(mine.get(k), default=str).replace(' ', '')}" for k in keys[:limit]]
    return ", ".join(shown) + (", ..." if len(keys) > limit else "")


# -- series ------------------------------------------------------------------------------------
def points(run: RunData, metric: str, axis: str = "step") -> list[tuple[float, float | None]]:
    """``(x, y)`` for every logged step, x the step or (``axis="time"``) the minutes of training so
    far; y None where the step logged no number (a step whose episodes all failed)."""
    out, elapsed = [], 0.0
    for i, row in enumerate(run.rows):
        elapsed += _number(row.get("step_time_s")) or 0.0
        x = elapsed / 60 if axis == "time" else float(_number(row.get("step")) or i + 1)
        out.append((x, _number(row.get(metric))))
    return out


def series(run: RunData, metric: str, axis: str = "step") -> tuple[list[float], list[float]]:
    """``(x, y)`` of *metric* over *axis*, finite values only."""
    pts = [(x, y) for x, y in points(run, metric, axis) if y is not None]
    return [x for x, _ in pts], [y for _, y in pts]


def aggregate(group: Group, metric: str, axis: str = "step") -> dict[str, list[float]]:
    """Mean, min and max over the group's runs at every x where a run logged a step.

    At each x, a run counts with its last logged value at or before x, inside the span it
    ran (a run that stopped early, or started its wall clock later, does not count beyond it),
    and not where that last step logged no number. ``n`` says how many runs counted; where
    none did, the values are NaN (drawn as a gap).
    """
    runs = [sorted(points(run, metric, axis), key=lambda p: p[0]) for run in group.runs]
    runs = [pts for pts in runs if pts]
    grid = sorted({x for pts in runs for x, _ in pts})
    out: dict[str, list[float]] = {"x": [], "mean": [], "min": [], "max": [], "n": []}
    nan = float("nan")
    for x in grid:
        vals = []
        for pts in runs:
            if pts[0][0] <= x <= pts[-1][0]:
                y = [py for px, py in pts if px <= x][-1]
                if y is not None:
                    vals.append(y)
        out["x"].append(x)
        out["mean"].append(sum(vals) / len(vals) if vals else nan)
        out["min"].append(min(vals) if vals else nan)
        out["max"].append(max(vals) if vals else nan)
        out["n"].append(len(vals))
    return out


# -- tables ------------------------------------------------------------------------------------
def eval_tags(runs: list[RunData]) -> list[str]:
    """Evaluation names found in any run: ``before``, ``after``, then the others by name."""
    tags: list[str] = []
    for run in runs:
        tags += [t for t in run.evals if t not in tags]
    return sorted(tags, key=lambda t: (t != "before", t != "after", t))


def _success(summary: dict[str, Any] | None) -> float | None:
    return _number(((summary or {}).get("overall") or {}).get("success_rate"))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _horizons(run: RunData, tags: list[str]) -> str:
    hs = [str((run.evals.get(t, {}).get("meta") or {}).get("max_turns")) for t in tags if t in run.evals]
    hs = [h for h in hs if h != "None"]
    return "/".join(dict.fromkeys(hs)) or "–"


def run_table(groups: list[Group], tags: list[str]) -> tuple[list[str], list[list[str]]]:
    """One row per run: group, seed, steps, failed steps, training wall time, each evaluation's success."""
    headers = ["run", "group", "seed", "steps", "steps with env failures", "train time (min)", "eval turns"]
    headers += [f"{t} success" for t in tags]
    if "before" in tags and "after" in tags:
        headers.append("after - before")
    rows = []
    for g in groups:
        for run in g.runs:
            row = [run.name, g.label, str(run.seed), str(run.steps), str(run.failed_steps),
                   f"{run.train_seconds / 60:.1f}", _horizons(run, tags)]
            row += [_pct(_success(run.evals.get(t))) for t in tags]
            if "before" in tags and "after" in tags:
                b, a = _success(run.evals.get("before")), _success(run.evals.get("after"))
                row.append("–" if a is None or b is None else f"{100 * (a - b):+.1f}")
            rows.append(row)
    return headers, rows


def group_table(groups: list[Group], tags: list[str]) -> tuple[list[str], list[list[str]]]:
    """One row per group: seeds, mean (min-max) of each evaluation's success and of training time."""
    headers = ["group", "seeds"] + [f"{t} success, mean (min-max)" for t in tags] + ["train time (min), mean"]
    rows = []
    for g in groups:
        row = [g.label, str(len(g.runs))]
        for t in tags:
            vals = [v for v in (_success(r.evals.get(t)) for r in g.runs) if v is not None]
            row.append("–" if not vals else (
                _pct(vals[0]) if len(vals) == 1
                else f"{_pct(sum(vals) / len(vals))} ({_pct(min(vals))}-{_pct(max(vals))}, n={len(vals)})"))
        row.append(f"{sum(r.train_seconds for r in g.runs) / len(g.runs) / 60:.1f}")
        rows.append(row)
    return headers, rows


# -- the whole comparison ----------------------------------------------------------------------
def default_out(paths: list[Path]) -> Path:
    """``compare/`` in the runs' common parent folder."""
    parents = [p.resolve().parent for p in paths]
    common = parents[0]
    while any(common != p and common not in p.parents for p in parents):
        common = common.parent
    return common / "compare"


def write_comparison(paths: list[str | Path], out: str | Path | None = None, *, by_seed: bool = True,
                     smooth: int = 1) -> dict[str, Any]:
    """Compare run directories: PNGs, ``compare.html`` (self-contained), ``compare.md`` and
    ``compare.json`` in *out* (default :func:`default_out`). Returns what ``compare.json`` holds."""
    from .compare_figures import save_png, render_figures  # matplotlib only when drawing
    if not paths:
        raise RunDirError("agentgym compare needs at least one run directory")
    runs = [load_run(p) for p in paths]
    seen: set[Path] = set()
    for run in runs:
        if run.path.resolve() in seen:
            raise RunDirError(f"run {str(run.path)!r} was given twice")
        seen.add(run.path.resolve())
    out_dir = Path(out) if out is not None else default_out([r.path for r in runs])
    if is_run_dir(out_dir):
        raise RunDirError(f"--out {str(out_dir)!r} is a run directory; pick another folder for the comparison")
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = group_runs(runs, by_seed=by_seed)
    figures = render_figures(groups, out_dir, smooth=smooth)
    tags = eval_tags(runs)
    judged_fig = judged_figure(groups, tags)  # a model judge's scores of the evaluations, if any
    if judged_fig is not None:
        save_png(judged_fig, out_dir / "judged.png")
        figures.append(out_dir / "judged.png")
    rt, gt, jt = run_table(groups, tags), group_table(groups, tags), judged_table(groups, tags)
    data = {
        "runs": [dict(zip(rt[0], row)) | {"path": str(r.path)} for row, r in zip(rt[1], [r for g in groups for r in g.runs])],
        "groups": [{"label": g.label, "runs": [r.name for r in g.runs],
                    **{t: [_success(r.evals.get(t)) for r in g.runs] for t in tags}} for g in groups],
        "judged": judged_data(groups, tags),
        "figures": [p.name for p in figures],
    }
    (out_dir / "compare.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    _write_pages(out_dir, groups, figures, rt, gt, smooth, jt)
    return data


def _write_pages(out: Path, groups: list[Group], figures: list[Path], rt: Any, gt: Any, smooth: int,
                 jt: Any = None) -> None:
    from .report import CSS, _html_table, _img_b64

    names = ", ".join(r.name for g in groups for r in g.runs)
    note = ("Runs whose configs are equal but for run.name, run.seed and run.output_dir are one group: "
            "the line is their mean, the band spans the lowest to the highest seed. Wall time is the sum "
            "of each run's step_time_s (evaluations and model loading not included)."
            + (f" Curves smoothed over {smooth} steps." if smooth > 1 else ""))
    judged_md = ["## Judged scores (mean reward of the evaluation, verdicts parsed)", "", markdown_table(*jt), ""] \
        if jt else []
    md = [f"# Comparison: {names}", "", note, "", "## Groups", "", markdown_table(*gt), "",
          "## Runs", "", markdown_table(*rt), "", *judged_md, "## Curves", ""]
    md += [f"![{p.stem}]({p.name})" for p in figures] + [""]
    (out / "compare.md").write_text("\n".join(md), encoding="utf-8")
    h = [f"<h1>Comparison of {len(rt[1])} runs</h1><p>{html.escape(names)}</p><p>{html.escape(note)}</p>",
         "<h2>Groups</h2>", _html_table(*gt), "<h2>Runs</h2>", _html_table(*rt),
         *(["<h2>Judged scores</h2>", _html_table(*jt)] if jt else []), "<h2>Curves</h2>",
         f"<img alt='overview' src='{_img_b64(figures[0])}'>",
         "<div class='plots'>" + "".join(f"<img alt='{p.stem}' src='{_img_b64(p)}'>" for p in figures[1:]) + "</div>"]
    (out / "compare.html").write_text(
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>AgentGym comparison</title>"
        f"<style>{CSS}</style></head><body>{''.join(h)}</body></html>", encoding="utf-8")

"""Judged scores in ``agentgym compare``: what a model judge among a run's rewards made of its evaluations.

An evaluation summary holds them under ``judged`` (``agentgym_core.evaluation.judged_scores``: per judge,
``reward_mean``, ``reward_std``, verdicts parsed, parse failures, gated). This module tabulates them per
run and draws ``judged.png``: one panel per judge, one group of bars per evaluation (before, after, ...),
one bar per run group (the mean over its seeds, whiskers from the lowest to the highest seed), each bar
labelled with the verdicts parsed of those asked, so a judge that could not answer shows as such.
"""
from __future__ import annotations

from typing import Any


def judge_names(groups: list[Any]) -> list[str]:
    """The judges (``judge:satisfaction``, ...) of any evaluation of any run, in order of appearance."""
    names: list[str] = []
    for g in groups:
        for run in g.runs:
            for summary in run.evals.values():
                names += [n for n in (summary.get("judged") or {}) if n not in names]
    return names


def judged_entry(summary: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    entry = ((summary or {}).get("judged") or {}).get(name)
    return entry if isinstance(entry, dict) and isinstance(entry.get("reward_mean"), (int, float)) else None


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "–"
    asked = int(entry.get("judged", 0)) + int(entry.get("parse_failures", 0))
    return f"{entry['reward_mean']:.3f} ({entry.get('judged', 0)}/{asked} parsed)"


def judged_table(groups: list[Any], tags: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """One row per run: each judge's mean reward on each evaluation, with the verdicts parsed; None if no
    evaluation was judged."""
    names = judge_names(groups)
    if not names:
        return None
    headers = ["run", "group"] + [f"{t} {n}" for n in names for t in tags]
    rows = [[run.name, g.label] + [_cell(judged_entry(run.evals.get(t), n)) for n in names for t in tags]
            for g in groups for run in g.runs]
    return headers, rows


def judged_data(groups: list[Any], tags: list[str]) -> dict[str, Any]:
    """For ``compare.json``: ``{judge: {group label: {tag: [reward_mean of each run, None if not judged]}}}``."""
    out: dict[str, Any] = {}
    for name in judge_names(groups):
        out[name] = {g.label: {t: [(judged_entry(r.evals.get(t), name) or {}).get("reward_mean") for r in g.runs]
                               for t in tags} for g in groups}
    return out


def judged_figure(groups: list[Any], tags: list[str]) -> Any:
    """The figure of ``judged.png`` (see the module docstring); None when no evaluation was judged."""
    from .plots import _figure

    names = judge_names(groups)
    if not names:
        return None
    fig = _figure()
    fig.set_size_inches(max(6.0, 2.0 + 1.5 * len(tags)) * len(names), 4.5)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    width = 0.8 / max(1, len(groups))
    for ax, name in zip(axes, names):
        for i, g in enumerate(groups):
            xs, means, lows, highs, labels = [], [], [], [], []
            for k, t in enumerate(tags):
                entries = [e for e in (judged_entry(r.evals.get(t), name) for r in g.runs) if e is not None]
                if not entries:
                    continue
                values = [float(e["reward_mean"]) for e in entries]
                mean = sum(values) / len(values)
                parsed = sum(int(e.get("judged", 0)) for e in entries)
                asked = parsed + sum(int(e.get("parse_failures", 0)) for e in entries)
                xs.append(k - 0.4 + width * (i + 0.5))
                means.append(mean)
                lows.append(mean - min(values))
                highs.append(max(values) - mean)
                labels.append(f"{parsed}/{asked}")
            if not xs:
                continue
            seeds = len(g.runs)
            label = g.label + (f" (mean of {seeds} seeds)" if seeds > 1 else "")
            bars = ax.bar(xs, means, width=width * 0.9, color=f"C{i % 10}", label=label,
                          yerr=[lows, highs] if seeds > 1 else None, capsize=3)
            ax.bar_label(bars, labels=labels, fontsize=7, padding=2)
        ax.set_xticks(range(len(tags)), tags)
        ax.set_ylim(0, 1.1)
        ax.set_ylabel("mean judged reward")
        ax.set_title(f"{name}: mean reward per evaluation\n(bar labels: verdicts parsed / asked)", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper left", fontsize=7)
    return fig

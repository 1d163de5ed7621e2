"""The evaluation summary as tables: one summary by category, several runs side by side.

Reads the summary format of :mod:`agentgym_core.evaluation` (what ``agentgym eval`` writes and
the report shows); formats only, computes no metric.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Column labels of the metrics (``{k}`` is the summary's k).
METRIC_LABELS = {
    "n": "n",
    "tasks": "tasks",
    "success_rate": "success",
    "avg_at_k": "Avg@{k}",
    "pass_at_k": "Pass@{k}",
    "pass_hat_k": "pass^{k}",
    "score_mean": "score",
    "turns_mean": "turns",
    "failed": "env failures",
}


# -- one summary -----------------------------------------------------------------------------------
def _fmt(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key in ("success_rate", "avg_at_k", "pass_at_k", "pass_hat_k"):
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _reasons(row: Mapping[str, Any]) -> str:
    reasons = row.get("end_reasons") or {}
    return ", ".join(f"{r} {c}" for r, c in reasons.items()) or "–"


def table_rows(summary: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted rows of one summary (overall first, then each category); with
    attempts, a ``by attempt j`` column each (the share solved by attempt *j*)."""
    k = summary.get("k", 1)
    keys = ["n", "tasks", "success_rate", "avg_at_k", "pass_at_k", "pass_hat_k", "score_mean", "turns_mean"]
    attempts = list((summary.get("overall") or {}).get("attempts") or {})
    headers = (["category"] + [METRIC_LABELS[key].format(k=k) for key in keys]
               + [f"by attempt {j}" for j in attempts] + ["end reasons"])
    rows = []
    overall = summary.get("overall") or {"n": 0, "tasks": 0}  # no episodes: zero counts, no rates
    named = [("overall", overall)]
    named += list((summary.get("categories") or {}).items())
    for name, row in named:
        by = row.get("attempts") or {}
        rows.append([name] + [_fmt(key, row.get(key)) for key in keys]
                    + [_fmt("success_rate", by.get(j)) for j in attempts] + [_reasons(row)])
    return headers, rows


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped)."""
    def cell(text: Any) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |"]
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def to_markdown(summary: Mapping[str, Any]) -> str:
    """The summary as one Markdown table: overall row, then one row per category; then a line per judge
    (:func:`judged_lines`)."""
    lines = repeat_lines(summary) + judged_lines(summary)
    return markdown_table(*table_rows(summary)) + ("\n\n" + "\n".join(lines) if lines else "")


def repeat_lines(summary: Mapping[str, Any]) -> list[str]:
    """What the repeat guard (``eval.repeat_guard``) did, when it was on: one line."""
    meta = summary.get("meta") or {}
    if not meta.get("repeat_guard"):
        return []
    return [f"Repeat guard: {meta['turns_resampled']} of {meta['turns']} replies repeated an action already taken in "
            f"answer to the same message and were sampled again (eval.repeat_guard {meta['repeat_guard']}, at "
            f"temperature {meta['repeat_temperature']})."]


def judged_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per judging reward of ``summary["judged"]`` (:func:`agentgym_core.evaluation.judged_scores`)."""
    out = []
    for name, j in (summary.get("judged") or {}).items():
        score = "" if j.get("score_mean") is None else f", mean score {j['score_mean']:.2f}"
        cost = j.get("cost") or {}
        spent = ""
        if cost:
            tokens = int(cost.get("prompt_tokens", 0)) + int(cost.get("completion_tokens", 0))
            spent = (f"; {int(cost.get('requests', 0))} judge requests, {int(cost.get('cache_hits', 0))} cache hits, "
                     f"{tokens:,} tokens, {float(cost.get('judge_seconds', 0.0)):.1f} s")
        screened = (f", {j['screened']} judged again as screened ({j.get('lowered', 0)} lowered)"
                    if j.get("screened") else "")
        out.append(f"Judged ({name}): mean reward {j['reward_mean']:.3f} (std {j['reward_std']:.3f}) over {j['n']} "
                   f"episodes; {j['judged']} verdicts parsed{score}, {j['parse_failures']} parse failures, "
                   f"{j['gated']} not judged for failing the env's state check, {j['skipped']} failed episodes"
                   f"{screened}{spent}.")
    return out


def compare_rows(summaries: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows for runs side by side: one column per run, one row per metric.

    Per-category success rates follow the overall metrics; a category missing from a run
    shows ``–``.
    """
    names = list(summaries)
    headers = ["metric"] + names
    rows: list[list[str]] = []
    metas = [s.get("meta") or {} for s in summaries.values()]
    if any(metas):  # what each column evaluated
        rows.append(["env"] + [str(m.get("env") or "–") for m in metas])
        rows.append(["model"] + [_short_model(m.get("model")) for m in metas])
        rows.append(["max turns"] + [str(m.get("max_turns") or "–") for m in metas])
    for key in ("n", "tasks", "success_rate", "avg_at_k", "pass_at_k", "pass_hat_k", "score_mean", "turns_mean",
                "failed"):
        label = METRIC_LABELS[key]
        ks = {s.get("k", 1) for s in summaries.values()}
        label = label.format(k=ks.pop() if len(ks) == 1 else "k")
        rows.append([label] + [_fmt(key, (s.get("overall") or {}).get(key)) for s in summaries.values()])
    rows += judged_rows(summaries)
    cats: list[str] = []
    for s in summaries.values():
        cats += [c for c in (s.get("categories") or {}) if c not in cats]
    for cat in sorted(cats):
        cells = []
        for s in summaries.values():
            row = (s.get("categories") or {}).get(cat)
            cells.append("–" if row is None else f"{_fmt('success_rate', row.get('success_rate'))} (n={row.get('n', 0)})")
        rows.append([f"success: {cat}"] + cells)
    return headers, rows


def judged_rows(summaries: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """Rows of the judged scores (``summary["judged"]``) for runs side by side: per judge, the mean reward
    (std) and the verdicts parsed of those asked; ``–`` for a run its judge did not score."""
    names: list[str] = []
    for s in summaries.values():
        names += [n for n in (s.get("judged") or {}) if n not in names]
    rows = []
    for name in names:
        entries = [(s.get("judged") or {}).get(name) for s in summaries.values()]
        rows.append([f"{name} reward"] + ["–" if j is None else f"{j['reward_mean']:.3f} ({j['reward_std']:.3f})"
                                           for j in entries])
        rows.append([f"{name} parsed"] + ["–" if j is None else f"{j['judged']}/{j['judged'] + j['parse_failures']}"
                                           for j in entries])
    return rows


def compare(summaries: Mapping[str, Mapping[str, Any]]) -> str:
    """A Markdown table of several summaries side by side (``{name: summary}``)."""
    if not summaries:
        return "(nothing to compare)"
    envs = {(s.get("meta") or {}).get("env") for s in summaries.values()} - {None}
    note = f"note: these columns evaluate different envs ({', '.join(sorted(envs))})\n\n" if len(envs) > 1 else ""
    return note + markdown_table(*compare_rows(summaries))


def _short_model(model: Any) -> str:
    """A model path shortened to what tells columns apart (``quickstart/step_000016``)."""
    if not model:
        return "–"
    parts = Path(str(model)).parts
    if len(parts) >= 3 and parts[-2] == "checkpoints":
        return f"{parts[-3]}/{parts[-1]}"
    return parts[-1] if parts else str(model)

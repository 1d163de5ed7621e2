"""``agentgym report RUN``: one self-contained HTML page (plots inlined) and a Markdown twin.

Both hold the run's summary, evaluation tables, training curves, a few best and worst
episodes turn by turn, and the resolved config.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
from pathlib import Path
from typing import Any

from agentgym_core.evaluation import compare_rows, markdown_table, table_rows
from .runs import Run, step_of
from .viewer.episode import context_label

TEXT_LIMIT = 400


def _clip(text: Any, limit: int = TEXT_LIMIT) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def run_overview(run: Run) -> list[tuple[str, str]]:
    """``(label, value)`` pairs summarising the training curve."""
    rows = run.metrics()
    if not rows:
        return [("steps logged", "0")]
    last = rows[-1]
    success = [r["success_rate"] for r in rows if isinstance(r.get("success_rate"), (int, float))]
    wall = sum(float(r.get("step_time_s") or 0) for r in rows)
    return [
        ("steps logged", str(len(rows))),
        ("last step", _fmt(last.get("step"))),
        ("episodes", str(sum(int(r.get("episodes") or 0) for r in rows))),
        ("env failures", str(sum(int(r.get("env_failures") or 0) for r in rows))),
        ("last reward (mean)", _fmt(last.get("reward_mean"))),
        ("last success rate", _fmt(last.get("success_rate"))),
        ("best success rate", _fmt(max(success) if success else None)),
        ("last horizon", _fmt(last.get("horizon"))),
        ("training time (s)", f"{wall:.1f}"),
    ]


def pick_episodes(run: Run, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The *n* best and *n* worst training episodes (best: success, reward, later step first)."""
    eps = [(key, ep) for key, ep in run.iter_summaries() if not ep.failed]
    if not eps:
        return [], []

    def score(item: Any) -> tuple:
        key, ep = item
        return (ep.success, ep.reward, ep.score, -ep.turns)

    best = sorted(eps, key=lambda it: (*score(it), step_of(it[0]) or 0), reverse=True)[:n]
    chosen = {(k, e.index) for k, e in best}
    worst = [it for it in sorted(eps, key=lambda it: (*score(it), -(step_of(it[0]) or 0))) if (it[0], it[1].index) not in chosen][:n]

    def load(items: list) -> list[dict[str, Any]]:
        out = []
        for key, ep in items:
            data = run.trajectory_index(key).read(ep.index)
            data["_file"] = key
            out.append(data)
        return out

    return load(best), load(worst)


def _episode_md(data: dict[str, Any]) -> str:
    rewards = data.get("rewards") or []
    head = (
        f"**{data.get('_file')} · episode {data.get('episode_id')}** — task {data.get('task_id')}, "
        f"{'success' if data.get('success') else 'failure'}, score {_fmt(data.get('score'))}, "
        f"reward {_fmt(sum(rewards) if rewards else None)}, end: {data.get('end_reason')}, "
        f"turns {len(data.get('turns') or [])}/{data.get('max_turns')}"
    )
    lines = [head, ""]
    for i, t in enumerate(data.get("turns") or []):
        model = _clip(t.get("text")).replace("\n", " ")
        obs = _clip(t.get("observation")).replace("\n", " ")
        lines.append(f"{i + 1}. model: `{model.replace('`', chr(39))}` → env: {obs}")
    return "\n".join(lines) + "\n"


def _img_b64(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _html_table(headers: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _episode_html(data: dict[str, Any]) -> str:
    rewards = data.get("rewards") or []
    ok = bool(data.get("success"))
    parts = [
        f"<div class='ep'><h4>{html.escape(str(data.get('_file')))} · episode {html.escape(str(data.get('episode_id')))} "
        f"<span class='{'ok' if ok else 'fail'}'>{'success' if ok else 'failure'}</span></h4>"
        f"<p>task {html.escape(str(data.get('task_id')))} · score {_fmt(data.get('score'))} · reward "
        f"{_fmt(sum(rewards) if rewards else None)} · end: {html.escape(str(data.get('end_reason')))} · turns "
        f"{len(data.get('turns') or [])}/{html.escape(str(data.get('max_turns')))}</p><ol>"
    ]
    for i, t in enumerate(data.get("turns") or []):
        r = rewards[i] if i < len(rewards) else None
        saw = f" · saw {html.escape(context_label(data, i))}" if t.get("context") else ""
        parts.append(
            f"<li><div class='model'>{html.escape(_clip(t.get('text')))}</div>"
            f"<div class='env'>{html.escape(_clip(t.get('observation')))}</div>"
            f"<small>reward {_fmt(r)}{saw}</small></li>"
        )
    parts.append("</ol></div>")
    return "".join(parts)


CSS = """
body{font:14px/1.5 system-ui,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#1d2329}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #dde1e5;padding:3px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f3f5f7}
img{max-width:100%;border:1px solid #e1e4e8;margin:6px 0}.plots{display:grid;grid-template-columns:1fr 1fr;gap:8px}
pre{background:#f6f8fa;padding:10px;overflow:auto}.ok{color:#1e8a3a}.fail{color:#c0392b}
.ep{border:1px solid #e1e4e8;border-radius:6px;padding:6px 12px;margin:8px 0}
.model{background:#d4f5d0;padding:2px 6px;border-radius:3px;white-space:pre-wrap;font-family:monospace}
.env{background:#eceff3;padding:2px 6px;border-radius:3px;margin-top:2px;white-space:pre-wrap;font-family:monospace}
"""


def write_report(run_dir: str | Path, *, episodes: int = 3, render: bool = True) -> tuple[Path, Path]:
    """Write ``report.html`` and ``report.md`` into *run_dir*; returns their paths.

    *render* re-draws the curves first (so the report shows the latest metrics); without
    matplotlib the report is written without plots.
    """
    run = Run(run_dir)
    plots: list[Path] = []
    note = ""
    if render:
        from agentgym_core import AgentGymError
        from .plots import render_plots

        try:
            plots = render_plots(run.path)
        except AgentGymError as exc:
            note = str(exc)
    if not plots:
        plots = sorted((run.path / "plots").glob("*.png")) if (run.path / "plots").is_dir() else []
    overview = run_overview(run)
    evals = run.eval_results()
    best, worst = pick_episodes(run, episodes)
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    config = run.config_text() or "(no config.yaml)"

    md = [f"# Run report: {run.name}", "", f"Generated {now} from `{run.path}`.", "", "## Summary", ""]
    md += [markdown_table(["", "value"], [[k, v] for k, v in overview]), ""]
    h = [f"<h1>Run report: {html.escape(run.name)}</h1><p>Generated {now} from <code>{html.escape(str(run.path))}</code>.</p>",
         "<h2>Summary</h2>", _html_table(["", "value"], [[k, v] for k, v in overview])]
    md += ["## Evaluation", ""]
    h.append("<h2>Evaluation</h2>")
    if not evals:
        md += ["No evaluation results (eval/*.json) in this run.", ""]
        h.append("<p>No evaluation results (eval/*.json) in this run.</p>")
    else:
        if len(evals) > 1:
            md += [markdown_table(*compare_rows(evals)), ""]
            h.append(_html_table(*compare_rows(evals)))
        for name, summary in evals.items():
            md += [f"### {name}", "", markdown_table(*table_rows(summary)), ""]
            h += [f"<h3>{html.escape(name)}</h3>", _html_table(*table_rows(summary))]
    md += ["## Training curves", ""]
    h.append("<h2>Training curves</h2>")
    if not plots and not note:
        note = "No curves: metrics.jsonl has no step yet."
    if note:
        md += [note, ""]
        h.append(f"<p>{html.escape(note)}</p>")
    md += [f"![{p.stem}](plots/{p.name})" for p in plots] + [""]
    h.append("<div class='plots'>" + "".join(f"<img alt='{p.stem}' src='{_img_b64(p)}'>" for p in plots) + "</div>")
    for title, items in (("Best episodes", best), ("Worst episodes", worst)):
        md += [f"## {title}", ""] + ([_episode_md(d) for d in items] or ["No episodes recorded.", ""])
        h += [f"<h2>{title}</h2>"] + ([_episode_html(d) for d in items] or ["<p>No episodes recorded.</p>"])
    md += ["## Config", "", "```yaml", config.rstrip(), "```", ""]
    h += ["<h2>Config</h2>", f"<pre>{html.escape(config)}</pre>"]

    md_path = run.path / "report.md"
    html_path = run.path / "report.html"
    md_path.write_text("\n".join(md), encoding="utf-8")
    html_path.write_text(
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(run.name)} · AgentGym report</title>"
        f"<style>{CSS}</style></head><body>{''.join(h)}</body></html>",
        encoding="utf-8",
    )
    return html_path, md_path

"""``agentgym report`` of a pipeline (a run config with ``stages:``): each stage's report, and one page of the stages."""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from agentgym_core.evaluation import compare_rows, markdown_table
from agentgym_core.pipeline import STATE_FILE, stage_dirs
from agentgym_core.rundir import RunDir


def write_pipeline_report(root: str | Path, *, episodes: int = 3, render: bool = True) -> tuple[Path, Path]:
    """Write every stage's report, then ``root/report.md`` and ``report.html``: the stages in order (trainer,
    status, wall time, hand-off) and their evaluations side by side (base, after each stage)."""
    from .report import write_report
    from .runs import is_run_dir

    root = Path(root)
    stages = json.loads((root / STATE_FILE).read_text(encoding="utf-8")).get("stages", [])
    for _, folder in stage_dirs(root):
        if is_run_dir(folder):
            write_report(folder, episodes=episodes, render=render)
    headers = ["stage", "trainer", "status", "wall time (s)", "started from", "report"]
    rows = [[s["name"], str(s.get("trainer", "–")), str(s.get("status", "–")), f"{s.get('wall_s', 0):.0f}",
             _previous(stages, i), f"{s['name']}/report.html"] for i, s in enumerate(stages)]
    evals = {f"{name}:{tag}": summary for name, folder in stage_dirs(root)
             for tag, summary in RunDir(folder).eval_results().items()}
    md = [f"# Pipeline {root.resolve().name}", "", markdown_table(headers, rows), ""]
    page = [f"<h1>Pipeline {html.escape(root.resolve().name)}</h1>", _html(headers, rows, link=5)]
    if evals:
        eval_headers, eval_rows = compare_rows(evals)
        md += ["## Held-out evaluations, stage by stage", "", markdown_table(eval_headers, eval_rows), ""]
        page += ["<h2>Held-out evaluations, stage by stage</h2>", _html(eval_headers, eval_rows)]
    md_path, html_path = root / "report.md", root / "report.html"
    md_path.write_text("\n".join(md), encoding="utf-8")
    html_path.write_text("<!doctype html><meta charset='utf-8'><title>pipeline report</title>"
                         "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;border:1px solid #ccc}"
                         "table{border-collapse:collapse}</style>" + "\n".join(page), encoding="utf-8")
    return html_path, md_path


def _previous(stages: list[dict[str, Any]], i: int) -> str:
    if i == 0:
        return "the config's model.path"
    before = stages[i - 1]
    return f"{before['name']} ({before.get('handoff', '–')})"


def _html(headers: list[str], rows: list[list[str]], link: int | None = None) -> str:
    def cell(j: int, text: str) -> str:
        text = html.escape(str(text))
        return f"<a href='{text}'>{text}</a>" if j == link else text

    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell(j, c)}</td>" for j, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"

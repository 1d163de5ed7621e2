"""Plots (PNG curves with the horizon overlaid) and the self-contained HTML/Markdown report."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentgym_core.cli.main import main
from agentgym_inspect.plots import render_plots
from agentgym_inspect.report import write_report
from agentgym_inspect.viewer.sample import write_sample_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return write_sample_run(tmp_path_factory.mktemp("runs") / "demo", steps=9, episodes_per_step=6, rounds=(2, 4, 6), step_interval=3)


def test_core_modules_import_no_matplotlib_or_torch():
    code = ("import sys, agentgym_core.evaluation, agentgym_inspect.runs, agentgym_inspect.plots, agentgym_inspect.report, "
            "agentgym_inspect.viewer.app, agentgym_core.cli.eval_cmd, agentgym_inspect.view_cmd, agentgym_inspect.report_cmd;"
            "print(sorted(m for m in ('matplotlib', 'torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_render_plots_writes_labelled_pngs_with_horizon_steps(run):
    import matplotlib.image as mpimg
    import numpy as np

    paths = render_plots(run)
    assert {p.stem for p in paths} == {"reward", "success", "turns", "kl", "entropy", "tokens_per_s", "loss"}
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(run / "plots" / "turns.png")[..., :3]
    red = (np.abs(img - np.array([0xD6, 0x27, 0x28]) / 255).sum(axis=-1) < 0.1).sum()
    assert red > 300  # the horizon step line (C3) is drawn


def test_metric_never_logged_gets_no_plot(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward_mean": 0.5, "kl": None}) + "\nnot json\n")
    assert [p.stem for p in render_plots(tmp_path)] == ["reward", "kl"]  # kl: logged as null, plot says so
    (tmp_path / "metrics.jsonl").write_text("")
    assert render_plots(tmp_path) == []


def test_report_is_self_contained(run):
    html_path, md_path = write_report(run, episodes=2)
    page = html_path.read_text()
    assert page.count("data:image/png;base64,") == 7 and "src='plots/" not in page
    assert "Pass@2" in page and "Best episodes" in page and "Worst episodes" in page
    assert "scaling_inter" in page  # the config
    md = md_path.read_text()
    assert "| metric | before | after |" in md and "![turns](plots/turns.png)" in md
    assert md.count("· episode ") == 4


def test_report_cli(run, tmp_path, capsys):
    assert main(["report", str(run), "--no-plots"]) == 0
    assert "report.html" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nope")]) == 1
    assert "is not a run directory" in capsys.readouterr().err


def test_report_of_a_run_that_has_not_logged_anything(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    html_path, md_path = write_report(tmp_path)
    md = md_path.read_text()
    assert "No curves: metrics.jsonl has no step yet." in md and "No episodes recorded." in md
    assert "No evaluation results" in html_path.read_text()

"""``agentgym compare``: seeds grouped into mean and min-max band, runs of different lengths, failed steps."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from agentgym_core.cli.main import main
from agentgym_inspect.compare import aggregate, group_runs, load_run, write_comparison


def _config(name: str, seed: int, rounds: list[int], out: str = "runs") -> dict:
    return {"run": {"name": name, "seed": seed, "output_dir": out, "overwrite": False},
            "model": {"path": "smollm2-135m-instruct", "max_context": 2048},
            "scheduler": {"name": "scaling_inter", "rounds": rounds, "step_interval": 2},
            "trainer": {"name": "rl", "algorithm": "grpo", "steps": 6}}


def _summary(success: float, max_turns: int) -> dict:
    return {"k": 1, "overall": {"n": 16, "tasks": 16, "failed": 0, "success_rate": success, "avg_at_k": success,
                                "pass_at_k": success, "score_mean": success, "turns_mean": 3.0,
                                "end_reasons": {"done": 8, "max_turns": 8}},
            "categories": {}, "meta": {"max_turns": max_turns, "model": "m", "env": "babyai", "k": 1}}


def make_run(path: Path, config: dict, success: list[float | None], *, failed: dict[int, int] | None = None,
             before: float | None = 0.1, after: float | None = None, step_time: float = 30.0) -> Path:
    """A run directory as the trainer leaves it: config.yaml, metrics.jsonl, eval/*.json (no training)."""
    (path / "eval").mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    rounds = config["scheduler"]["rounds"]
    lines = []
    for i, s in enumerate(success, start=1):
        bad = (failed or {}).get(i, 0)
        row = {"step": i, "success_rate": s, "reward_mean": None if s is None else s - 0.1,
               "turns_mean": 1.5 + i / 10, "horizon": rounds[min((i - 1) // 2, len(rounds) - 1)],
               "tokens_per_s": 100.0 + i, "step_time_s": step_time, "episodes": 16, "env_failures": bad,
               "loss": float("nan") if bad else 0.5, "pg_loss": None if bad else 0.1}
        lines.append(json.dumps(row).replace("NaN", "null") if i % 2 else json.dumps(row))  # both spellings
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    if before is not None:
        (path / "eval" / "before.json").write_text(json.dumps(_summary(before, rounds[-1])))
    if after is not None:
        (path / "eval" / "after.json").write_text(json.dumps(_summary(after, rounds[-1])))
    return path


@pytest.fixture()
def three_runs(tmp_path):
    """Two seeds of one experiment (6 and 4 steps) and another experiment with failed steps."""
    a0 = make_run(tmp_path / "runs" / "si-s0", _config("si-s0", 0, [2, 4, 6]), [0.0, 0.25, 0.5, 0.5, 0.75, 1.0],
                  after=0.5)
    a1 = make_run(tmp_path / "runs" / "si-s1", _config("si-s1", 1, [2, 4, 6], out=str(tmp_path)),
                  [0.5, 0.25, 0.5, 0.25], after=0.25, step_time=60.0)
    b0 = make_run(tmp_path / "runs" / "fixed-s0", _config("fixed-s0", 0, [6]), [0.0, None, 0.25, 0.0, 0.5],
                  failed={2: 16, 4: 3}, after=None)
    return a0, a1, b0


def test_seeds_of_one_config_are_one_group(three_runs):
    a0, a1, b0 = three_runs
    groups = group_runs([load_run(p) for p in (a0, b0, a1)])
    assert [(g.label, [r.name for r in g.runs]) for g in groups] == [("si", ["si-s0", "si-s1"]), ("fixed", ["fixed-s0"])]
    assert [len(g.runs) for g in group_runs([load_run(p) for p in three_runs], by_seed=False)] == [1, 1, 1]


def test_same_label_for_different_configs_names_the_difference(tmp_path):
    a = make_run(tmp_path / "x" / "run", _config("run", 0, [2, 4]), [0.1])
    b = make_run(tmp_path / "y" / "run", _config("run", 0, [6]), [0.2])
    labels = [g.label for g in group_runs([load_run(a), load_run(b)])]
    assert labels == ["run (scheduler.rounds=[2,4])", "run (scheduler.rounds=[6])"]


def test_mean_and_band_over_runs_of_different_lengths(three_runs):
    a0, a1, _ = three_runs
    (group,) = group_runs([load_run(a0), load_run(a1)])
    agg = aggregate(group, "success_rate")
    assert agg["x"] == [1, 2, 3, 4, 5, 6]
    assert agg["n"] == [2, 2, 2, 2, 1, 1]  # seed 1 stopped after 4 steps
    assert agg["mean"][:4] == [0.25, 0.25, 0.5, 0.375] and agg["mean"][4:] == [0.75, 1.0]
    assert agg["min"][0] == 0.0 and agg["max"][0] == 0.5
    by_time = aggregate(group, "success_rate", "time")  # minutes: seed 0 steps of 30 s, seed 1 of 60 s
    assert by_time["x"] == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0]
    assert by_time["n"] == [1, 2, 2, 2, 2, 2, 1]  # seed 1 had no step done at 0.5 min; seed 0 ended at 3 min
    assert by_time["mean"][1] == 0.375  # seed 0 after step 2 (0.25), seed 1 after step 1 (0.5)
    assert by_time["mean"][-1] == 0.25


def test_failed_steps_leave_gaps_not_nans(three_runs):
    _, _, b0 = three_runs
    run = load_run(b0)
    assert run.failed_steps == 2 and run.steps == 5
    (group,) = group_runs([run])
    agg = aggregate(group, "success_rate")
    assert agg["x"] == [1, 2, 3, 4, 5] and agg["n"] == [1, 0, 1, 1, 1]  # step 2 logged null: a gap
    assert math.isnan(agg["mean"][1]) and agg["mean"][2] == 0.25
    assert aggregate(group, "loss")["n"] == [1, 0, 1, 0, 1]  # NaN / null losses of the failed steps


def test_compare_writes_pngs_page_and_table(three_runs, tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    out = tmp_path / "cmp"
    data = write_comparison(list(three_runs), out)
    stems = {p.stem for p in out.glob("*.png")}
    assert {"overview", "success_vs_step", "success_vs_time", "reward_vs_step", "turns_vs_step", "horizon_vs_step",
            "tokens_per_s_vs_step", "tokens_per_s_vs_time"} <= stems
    for p in out.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The two-seed group's band: C0 (#1f77b4) at alpha 0.2 over white.
    img = mpimg.imread(out / "success_vs_step.png")[..., :3]
    band = 0.8 + 0.2 * np.array([0x1F, 0x77, 0xB4]) / 255
    assert (np.abs(img - band).sum(axis=-1) < 0.03).sum() > 500
    page = (out / "compare.html").read_text()
    assert page.count("data:image/png;base64,") == len(data["figures"]) == len(stems)
    runs = {r["run"]: r for r in data["runs"]}
    assert runs["si-s0"]["before success"] == "10.0%" and runs["si-s0"]["after success"] == "50.0%"
    assert runs["si-s0"]["after - before"] == "+40.0" and runs["fixed-s0"]["after success"] == "–"
    assert runs["fixed-s0"]["steps with env failures"] == "2" and runs["si-s1"]["train time (min)"] == "4.0"
    assert runs["si-s0"]["eval turns"] == "6"
    md = (out / "compare.md").read_text()
    assert "| si | 2 | 10.0% (10.0%-10.0%, n=2) | 37.5% (25.0%-50.0%, n=2) |" in md
    assert "si-s1" in page and "fixed-s0" in page


def test_compare_cli(three_runs, tmp_path, capsys):
    assert main(["compare", *map(str, three_runs)]) == 0
    out = capsys.readouterr().out
    assert "si: 2 runs (si-s0, si-s1)" in out and "fixed: 1 run (fixed-s0)" in out
    assert (three_runs[0].parent / "compare" / "compare.html").is_file()  # default: next to the runs
    assert main(["compare", str(three_runs[0]), str(tmp_path / "nope")]) == 1
    assert "is not a run directory" in capsys.readouterr().err
    assert main(["compare", str(three_runs[0]), "--out", str(three_runs[1])]) == 1
    assert "is a run directory" in capsys.readouterr().err


def _judged(reward: float, parsed: int, failures: int) -> dict:
    """``summary["judged"]`` as agentgym_core.evaluation.judged_scores writes it."""
    return {"judge:satisfaction": {"n": parsed + failures, "reward_mean": reward, "reward_std": 0.1, "judged": parsed,
                                   "parse_failures": failures, "gated": 0, "skipped": 0, "score_mean": 1 + 4 * reward}}


def test_judged_scores_are_drawn_and_tabulated(three_runs, tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    for run, reward in zip(three_runs[:2], (0.75, 0.25)):  # the two seeds of "si": judged after training
        summary = json.loads((run / "eval" / "after.json").read_text())
        (run / "eval" / "after.json").write_text(json.dumps(summary | {"judged": _judged(reward, 3, 1)}))
    out = tmp_path / "cmp"
    data = write_comparison(list(three_runs), out)
    assert data["judged"] == {"judge:satisfaction": {"si": {"before": [None, None], "after": [0.75, 0.25]},
                                                     "fixed": {"before": [None], "after": [None]}}}
    assert "judged.png" in data["figures"]
    img = mpimg.imread(out / "judged.png")[..., :3]
    c0 = np.array([0x1F, 0x77, 0xB4]) / 255  # the "si" bar: the mean of its seeds, 0.5
    assert (np.abs(img - c0).sum(axis=-1) < 0.03).sum() > 500
    md = (out / "compare.md").read_text()
    assert "| si-s0 | si | – | 0.750 (3/4 parsed) |" in md and "| fixed-s0 | fixed | – | – |" in md
    assert "Judged scores" in (out / "compare.html").read_text()
    plain = write_comparison([three_runs[2]], tmp_path / "plain")  # nothing judged: no figure, no table
    assert plain["judged"] == {} and not (tmp_path / "plain" / "judged.png").exists()
    assert "Judged" not in (tmp_path / "plain" / "compare.md").read_text()


def test_eval_compare_has_the_judged_rows(three_runs, capsys):
    summary = json.loads((three_runs[0] / "eval" / "after.json").read_text())
    (three_runs[0] / "eval" / "after.json").write_text(json.dumps(summary | {"judged": _judged(0.75, 3, 1)}))
    assert main(["eval", "--compare", str(three_runs[0]), str(three_runs[2])]) == 0
    out = capsys.readouterr().out
    assert "| judge:satisfaction reward | 0.750 (0.100) | – |" in out
    assert "| judge:satisfaction parsed | 3/4 | – |" in out

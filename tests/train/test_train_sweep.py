"""``agentgym train --seeds 0,1 --sweep key=a,b``: one run directory per seed and grid value, trained one
after another, every config checked first, a summary table printed and written as JSON next to the runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentgym_core.cli.main import main
from agentgym_core.errors import ConfigError
from agentgym_core.sweep import parse_seeds, parse_sweep, plan, split_values

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling,inspect")
CLI = [sys.executable, "-m", "agentgym_core.cli.main"]


def tiny_config(model: Path, out: Path, name: str = "tiny", **extra: str) -> list[str]:
    """Dotlist overrides of a one-step babyai run of a tiny model with in-process envs."""
    items = {
        "run.name": name, "run.output_dir": str(out), "model.path": str(model), "model.max_context": "1024",
        "env.name": "babyai", "env.levels": "[GoToRedBallGrey]", "engine.name": "hf",
        "scheduler.name": "scaling_inter", "scheduler.rounds": "[2]",
        "rollout.tasks_per_step": "2", "rollout.group_size": "2", "rollout.max_new_tokens": "8",
        "eval.tasks": "1", "eval.before": "false", "eval.after": "false",
        "trainer.name": "rl", "trainer.steps": "1", "trainer.lr": "1e-3", "trainer.finetune": "full",
        "trainer.local_envs": "true", "trainer.progress": "false", **extra,
    }
    return [f"{k}={v}" for k, v in items.items()]


def test_seeds_and_grid_values_parse():
    assert parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("0-2,7,1") == [0, 1, 2, 7]
    with pytest.raises(ConfigError, match="expected seeds such as 0,1,2"):
        parse_seeds("a")
    with pytest.raises(ConfigError, match="expected seeds"):
        parse_seeds("3-1")
    assert split_values("[3],[3,6,9],'a,b'") == ["[3]", "[3,6,9]", "'a,b'"]
    assert parse_sweep("trainer.lr=1e-3,3e-4") == ("trainer.lr", ["1e-3", "3e-4"])
    for bad in ("trainer.lr", "trainer.lr=1e-3,,3e-4", "=1"):
        with pytest.raises(ConfigError, match="expected key.path=value1,value2"):
            parse_sweep(bad)
    with pytest.raises(ConfigError, match="give seeds with --seeds"):
        parse_sweep("run.seed=1,2")


def test_plan_names_every_combination():
    runs = plan("si", [0, 1], ["scheduler.rounds=[3],[3,6,9]", "trainer.lr=1e-3"])
    assert [r.name for r in runs] == ["si-s0-rounds3-lr1e-3", "si-s1-rounds3-lr1e-3",
                                      "si-s0-rounds3-6-9-lr1e-3", "si-s1-rounds3-6-9-lr1e-3"]
    assert runs[3].overrides() == ["scheduler.rounds=[3,6,9]", "trainer.lr=1e-3", "run.seed=1",
                                   "run.name=si-s1-rounds3-6-9-lr1e-3"]
    assert [r.name for r in plan("q", [4], [])] == ["q-s4"]
    with pytest.raises(ConfigError, match="would be named 'q-s0-rounds3'"):
        plan("q", [0], ["scheduler.rounds=[3],(3)"])
    with pytest.raises(ConfigError, match="given twice"):
        plan("q", [0], ["trainer.lr=1", "trainer.lr=2"])


def test_every_config_and_run_directory_is_checked_before_any_run(tmp_path, capsys):
    args = ["train", *tiny_config(tmp_path / "no-model", tmp_path / "runs"), "--seeds", "0,1"]
    assert main([*args, "--sweep", "trainer.lr=1e-3,-1"]) == 1
    err = capsys.readouterr().err
    assert "sweep run tiny-s0-lr-1 (trainer.lr=-1)" in err and "trainer.lr" in err
    assert not (tmp_path / "runs").exists()  # nothing started

    held = tmp_path / "runs" / "tiny-s1"
    held.mkdir(parents=True)
    (held / "metrics.jsonl").write_text('{"step": 1}\n')
    assert main(args) == 1
    assert "tiny-s1 already holds a run (1 step logged" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "tiny-s0").exists()
    assert main([*args, "--resume", str(held)]) == 1
    assert "--seeds/--sweep start new runs" in capsys.readouterr().err
    assert main(["train", *tiny_config(tmp_path, tmp_path / "runs"), "--jobs", "2"]) == 1
    assert "give --seeds or --sweep too" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(1200)  # four runs in subprocesses: minutes on a loaded 2-core machine
def test_sweep_trains_each_run_and_reports_the_failed_one(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("agentgym_env_babyai")
    pytest.importorskip("agentgym_engine_hf")
    from agentgym_hf.loading import load_tokenizer, tiny_random_model

    model = tmp_path / "tiny-model"
    tok = load_tokenizer("smollm2-135m-instruct")
    tiny_random_model(tok, seed=3).save_pretrained(str(model))
    tok.save_pretrained(str(model))
    runs = tmp_path / "runs"
    # 2 seeds x 2 model paths, 2 at a time; the second path does not exist, so those runs fail when loading.
    args = ["train", *tiny_config(model, runs, name="sw", **{"eval.before": "true", "eval.after": "true"}),
        "--seeds", "0,1", "--sweep", f"model.path={model},{tmp_path / 'missing'}", "--jobs", "2"]
    proc = subprocess.run(CLI + args, env=ENV, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "2 of 4 sweep runs did not finish: sw-s0-path-" in out, out
    summary = json.loads((runs / "sw-sweep.json").read_text())
    rows = {r["run"]: r for r in summary["runs"]}
    ok = [name for name, r in rows.items() if r["status"] == "ok"]
    assert len(rows) == 4 and len(ok) == 2, rows
    for name in ok:
        r = rows[name]
        assert r["steps"] == 1 and r["before"] is not None and r["after"] is not None and r["wall_s"] > 0
        config = yaml.safe_load((runs / name / "config.yaml").read_text())
        assert config["run"]["name"] == name and config["run"]["seed"] == r["seed"]
        assert (runs / name / "eval" / "after.json").is_file()
        assert "held-out success  after" in (runs / f"{name}.log").read_text()  # --jobs 2: each run's output
    assert sorted(rows[n]["seed"] for n in ok) == [0, 1]
    assert all(r["status"] == "failed (exit 1)" for n, r in rows.items() if n not in ok)
    assert "| run | seed | model.path | status | steps | before | after | wall time |" in out, out

    # The two seeds of the config that trained are one group in agentgym compare.
    proc = subprocess.run(CLI + ["compare", *(str(runs / n) for n in ok), "--out", str(tmp_path / "cmp")],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 runs" in proc.stdout and (tmp_path / "cmp" / "overview.png").is_file()


def test_an_evaluation_written_later_updates_the_sweep_summary(tmp_path):
    """A sweep trained with eval.after=false shows "–"; `agentgym eval --model RUN` writing eval/after.json
    later re-reads that run into every summary listing it (JSON and the .md table), and no other run."""
    from agentgym_core.sweep import SweepRun, refresh, save_summary, summary_row

    runs = [SweepRun(name=f"si-s{seed}", seed=seed, grid=("scheduler.rounds=[2]",)) for seed in (0, 1)]
    for run in runs:
        (tmp_path / run.name).mkdir()
        (tmp_path / run.name / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    path = tmp_path / "si-sweep.json"
    save_summary(path, {"config": [], "overrides": [], "runs": [summary_row(r, tmp_path, "ok", 60.0) for r in runs]})
    assert "| si-s0 | 0 | [2] | ok | 2 | – | – | 1.0 min |" in path.with_suffix(".md").read_text()
    (tmp_path / "si-s0" / "eval").mkdir()
    (tmp_path / "si-s0" / "eval" / "after.json").write_text(json.dumps({"overall": {"success_rate": 0.25, "n": 16}}))
    (tmp_path / "other-sweep.json").write_text("not json")  # someone else's file: left alone
    assert refresh(tmp_path / "si-s0") == [path]
    rows = {r["run"]: r for r in json.loads(path.read_text())["runs"]}
    assert rows["si-s0"]["after"] == 0.25 and rows["si-s0"]["status"] == "ok" and rows["si-s0"]["wall_s"] == 60.0
    assert rows["si-s1"]["after"] is None
    assert "| si-s0 | 0 | [2] | ok | 2 | – | 25.0% | 1.0 min |" in path.with_suffix(".md").read_text()
    assert (tmp_path / "other-sweep.json").read_text() == "not json"

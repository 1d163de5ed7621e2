"""``agentgym eval``: --compare of runs and JSON files, argument errors."""
from __future__ import annotations

import json

import pytest

from agentgym_core.cli.main import main
from agentgym_core.evaluation import summarize
from agentgym_inspect.viewer.sample import write_sample_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return (write_sample_run(root / "base", steps=2, episodes_per_step=2, seed=1),
            write_sample_run(root / "tuned", steps=2, episodes_per_step=2, seed=2))


def test_compare_one_run_before_after(runs, capsys):
    assert main(["eval", "--compare", str(runs[0])]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "| metric | base:before | base:after |"
    assert "Pass@2" in out


def test_compare_runs_and_json_files(runs, tmp_path, capsys):
    extra = tmp_path / "other.json"
    extra.write_text(json.dumps(summarize([{"task_id": 1, "success": True, "turns": [{}]}], k=2)))
    table = tmp_path / "cmp.md"
    assert main(["eval", "--compare", str(runs[0]), str(runs[1]), str(extra), "--out", str(table)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "| metric | base | tuned | other |"
    assert "| success |" in out and "100.0%" in out
    assert table.read_text().strip() == out.strip()


def test_compare_errors_name_the_input(runs, tmp_path, capsys):
    assert main(["eval", "--compare", str(tmp_path / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert main(["eval", "--compare", str(tmp_path / "bad.json")]) == 1
    assert "not an evaluation summary" in capsys.readouterr().err
    empty = tmp_path / "fresh"
    (empty / "trajectories").mkdir(parents=True)
    assert main(["eval", "--compare", str(empty)]) == 1
    assert "agentgym eval --model" in capsys.readouterr().err


def test_eval_argument_errors(runs, tmp_path, capsys):
    assert main(["eval"]) == 2
    assert "--model is required" in capsys.readouterr().err
    assert main(["eval", "--model", str(tmp_path), "oops"]) == 2
    assert "key.path=value" in capsys.readouterr().err
    assert main(["eval", "--model", str(tmp_path)]) == 2
    assert "-c CONFIG is required" in capsys.readouterr().err
    no_ckpt = tmp_path / "run"
    (no_ckpt / "trajectories").mkdir(parents=True)
    assert main(["eval", "--model", str(no_ckpt)]) == 1
    assert "has no checkpoint" in capsys.readouterr().err


def test_eval_model_that_does_not_exist_names_model(runs, tmp_path, capsys):
    typo = runs[0].parent / "bsae"
    assert main(["eval", "--model", str(typo)]) == 1
    err = capsys.readouterr().err
    assert f"--model {str(typo)!r} does not exist. Did you mean 'base'?" in err and "-c CONFIG" not in err
    cfg = tmp_path / "c.yaml"
    cfg.write_text("env: {name: babyai}\n")
    assert main(["eval", "-c", str(cfg), "--model", "/no/such/model"]) == 1
    err = capsys.readouterr().err
    assert "--model '/no/such/model' does not exist" in err and "model.path" not in err
    assert main(["eval", "--model", "x", str(cfg)]) == 2
    assert f"pass it with -c {cfg}" in capsys.readouterr().err

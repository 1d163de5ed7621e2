"""``--resume RUN key=value``: the overrides are saved to RUN/config.yaml, so a second resume (after
a crash) continues with them; resuming a finished run says so instead of silently doing nothing.
Checkpoints' trainer_state.json is strict JSON (NaN metrics are null)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import tiny_config  # noqa: E402

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling")
CLI = [sys.executable, "-m", "agentgym_core.cli.main", "train"]


def _train(args: list[str]) -> tuple[int, str]:
    proc = subprocess.run(CLI + args, env=ENV, capture_output=True, text=True, timeout=400)
    return proc.returncode, proc.stdout + proc.stderr


def _strict_json(path: Path):
    def refuse(name):
        raise ValueError(f"{path} holds {name}, which is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.mark.slow
def test_resume_overrides_are_saved_and_a_finished_run_says_so(tmp_path):
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    run = runs / "grow"
    rc, out = _train(tiny_config(model, runs, name="grow", **{"trainer.steps": "2", "eval.tasks": "1",
                                                                "eval.after": "true"}))
    assert rc == 0, out

    rc, out = _train(["--resume", str(run), "trainer.steps=3"])
    assert rc == 0, out
    assert "saved the settings of this resume" in out, out
    assert yaml.safe_load((run / "config.yaml").read_text())["trainer"]["steps"] == 3
    assert yaml.safe_load((run / "config.prev.yaml").read_text())["trainer"]["steps"] == 2
    assert [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
    after = json.loads((run / "eval" / "after.json").read_text())
    assert Path(after["meta"]["model"]).name == "step_000003"

    # The second resume reads the saved steps (3): the run is complete, and it says so.
    rc, out = _train(["--resume", str(run)])
    assert rc == 0, out
    assert "nothing to train" in out and "trainer.steps=6" in out, out
    assert "already evaluates this checkpoint" in out, out
    assert [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
    assert (run / "checkpoints" / "latest").read_text().strip() == "step_000003"
    assert not (run / "checkpoints" / "step_000004").exists()

    # trainer_state.json is strict JSON: the NaN kl (kl_coef 0) is written as null, as in metrics.jsonl.
    state = _strict_json(run / "checkpoints" / "step_000003" / "trainer_state.json")
    assert state["step"] == 3 and state["metrics"]["kl"] is None
    _strict_json(run / "eval" / "after.json")


def test_a_config_file_given_without_c_is_named(tmp_path):
    cfg = tmp_path / "my_run.yaml"
    cfg.write_text("run: {name: x}\n")
    rc, out = _train([str(cfg)])
    assert rc == 1
    assert f"pass it with -c, e.g. agentgym train -c {cfg}" in out, out
    assert "Traceback" not in out

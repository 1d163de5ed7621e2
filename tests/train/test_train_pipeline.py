"""``stages:`` pipelines: sft then rl from one command; killed in the rl stage, resumed, the same result."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_trainer_sft")

from agentgym_hf.testing import tiny_model_dir  # noqa: E402

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,sft,scaling")
CLI = [sys.executable, "-m", "agentgym_core.cli.main", "train"]


def pipeline(model: Path, out: Path, name: str, *, rl_lora: bool = True) -> dict:
    rl = {"name": "rl", "steps": 4, "lr": 1e-3, "save_every": 1, "keep_checkpoints": 0, "local_envs": True,
          "progress": False, "finetune": "lora" if rl_lora else "full"}
    return {
        "run": {"name": name, "output_dir": str(out), "seed": 3},
        "model": {"path": str(model), "max_context": 1024, "dtype": "fp32"},
        "env": {"name": "babyai", "levels": ["GoToLocal"], "brief": True, "test_seeds": 4},
        "agent": {"action_format": "free", "instruction_position": "after_observation"},
        "rollout": {"tasks_per_step": 2, "group_size": 2, "max_new_tokens": 6, "concurrency": 1, "lockstep": True},
        "eval": {"tasks": 2},
        "scheduler": {"name": "fixed", "turns": 3},
        "stages": [
            {"name": "sft", "trainer": {"name": "sft", "demos_expert": "heuristic", "demos_episodes": 4, "epochs": 1,
                                        "batch_size": 2, "lr": 1e-3, "finetune": "lora", "local_envs": True,
                                        "progress": False}},
            {"name": "rl", "trainer": rl},
        ],
    }


def _write(tmp: Path, cfg: dict) -> Path:
    path = tmp / f"{cfg['run']['name']}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _steps(run: Path) -> dict[int, list]:
    out = {}
    for f in sorted((run / "trajectories").glob("step_*.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        out[int(f.stem[5:])] = [(r["task_id"], r["token_ids"]) for r in rows]
    return out


@pytest.mark.slow
@pytest.mark.timeout(1200)  # three pipelines of two stages
def test_pipeline_killed_in_rl_resumes_to_the_same_result(tmp_path):
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    straight = subprocess.run([*CLI, "-c", str(_write(tmp_path, pipeline(model, runs, "straight")))], env=ENV,
                              capture_output=True, text=True, timeout=600)
    assert straight.returncode == 0, straight.stderr
    root = runs / "straight"
    state = json.loads((root / "pipeline.json").read_text())["stages"]
    assert [s["name"] for s in state] == ["sft", "rl"] and all(s["status"] == "completed" for s in state)
    assert state[0]["handoff"] == "LoRA merged" and state[0]["next_model"] == str(root / "sft" / "merged")
    rl_cfg = yaml.safe_load((root / "rl" / "config.yaml").read_text())
    assert rl_cfg["model"]["path"] == str(root / "sft" / "merged") and rl_cfg["eval"]["before"] is False
    assert (root / "sft" / "eval" / "before.json").is_file() and (root / "rl" / "eval" / "after.json").is_file()
    assert not (root / "rl" / "eval" / "before.json").exists()
    assert "stage      sft: completed" in straight.stdout and "stage       rl: completed" in straight.stdout
    table = subprocess.run([*CLI[:-1], "eval", "--compare", str(root)], env=ENV, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert "| metric | sft:before | sft:after | rl:after |" in table.stdout  # the stages in order
    report = subprocess.run([*CLI[:-1], "report", str(root), "--no-plots"],
                            env={**ENV, "AGENTGYM_LOAD_PLUGINS": ENV["AGENTGYM_LOAD_PLUGINS"] + ",inspect"},
                            capture_output=True, text=True)
    if importlib.util.find_spec("agentgym_inspect") is not None:
        assert report.returncode == 0, report.stderr
        text = (root / "report.md").read_text()
        assert "| sft | sft | completed |" in text and "rl:after" in text and (root / "rl" / "report.html").is_file()

    victim = subprocess.Popen([*CLI, "-c", str(_write(tmp_path, pipeline(model, runs, "killed")))], env=ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    latest = runs / "killed" / "rl" / "checkpoints" / "latest"
    deadline = time.time() + 500
    while time.time() < deadline and victim.poll() is None:
        if latest.exists() and latest.read_text().strip() >= "step_000002":
            break
        time.sleep(0.05)
    assert victim.poll() is None, "the pipeline finished before it could be killed: " + victim.stderr.read()
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    resumed_from = int(latest.read_text().strip()[5:])
    assert 2 <= resumed_from < 4
    again = subprocess.run([*CLI, "--resume", str(runs / "killed")], env=ENV, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr
    assert "stage 1/2 sft: already completed" in again.stderr and "(resuming)" in again.stderr

    a, b = root / "rl", runs / "killed" / "rl"
    assert _steps(a) == _steps(b)  # same tasks and sampled tokens in every rl step
    sa = json.loads((a / "checkpoints" / "step_000004" / "trainer_state.json").read_text())
    sb = json.loads((b / "checkpoints" / "step_000004" / "trainer_state.json").read_text())
    assert sa["param_sha256"] == sb["param_sha256"], "weights after the resumed pipeline differ"
    ea = json.loads((a / "eval" / "after.json").read_text())
    eb = json.loads((b / "eval" / "after.json").read_text())
    assert ea["overall"] == eb["overall"]
    ta = [json.loads(line)["token_ids"] for line in (a / "eval" / "after_trajectories.jsonl").read_text().splitlines()]
    tb = [json.loads(line)["token_ids"] for line in (b / "eval" / "after_trajectories.jsonl").read_text().splitlines()]
    assert ta == tb


def test_stage_errors_name_the_stage(tmp_path):
    from agentgym_core.config import load_config
    from agentgym_core.errors import ConfigError

    cfg = pipeline(Path("unused"), tmp_path, "bad")
    cfg["stages"][1]["trainer"]["lr"] = -1
    with pytest.raises(ConfigError, match=r"stages\[1\] \(rl\): .*trainer.lr must be > 0"):
        load_config(_write(tmp_path, cfg))
    cfg = pipeline(Path("unused"), tmp_path, "bad2")
    cfg["stages"][0]["run"] = {"seed": 1}
    with pytest.raises(ConfigError, match="the run section is the pipeline's"):
        load_config(_write(tmp_path, cfg))
    cfg["stages"][0].pop("run")
    cfg["stages"][1]["name"] = "sft"
    with pytest.raises(ConfigError, match="is used twice"):
        load_config(_write(tmp_path, cfg))

"""The trainer's held-out evaluation plays the same task ids and categories as ``agentgym eval``,
on an env whose splits are not ranges (codefix: 331 train and 93 test ids, interleaved), with
env servers and with envs in-process. It used to evaluate ``range(len(test))``: 68 of codefix's
93 "test" ids were training tasks, and with env servers ``categories`` came back empty."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_codefix")
pytest.importorskip("agentgym_engine_hf")

from agentgym_hf.testing import tiny_model_dir  # noqa: E402

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="codefix,hf,rl")
CLI = [sys.executable, "-m", "agentgym_core.cli.main"]


def _cli(args: list[str]) -> str:
    proc = subprocess.run(CLI + args, env=ENV, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _episodes(path: Path) -> list[tuple[int, bool]]:
    return [(e["task_id"], e["success"]) for e in map(json.loads, path.read_text().splitlines())]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("model"))


@pytest.mark.slow
@pytest.mark.parametrize("local", [True, False], ids=["local", "servers"])
def test_trainer_and_eval_hold_out_the_same_tasks(model, tmp_path, local):
    from agentgym_env_codefix.env import CodeFixEnv

    from agentgym_core.env.spec import EnvSpec

    spec = EnvSpec.from_env(CodeFixEnv(), name="codefix")
    train, test = set(spec.ids("train")), list(spec.ids("test"))
    assert test != list(range(test[0], test[0] + len(test)))  # the point: not a range

    runs = tmp_path / "runs"
    run = runs / "heldout"
    config = {
        "run.name": "heldout", "run.output_dir": runs, "model.path": model, "model.max_context": "1024",
        "env.name": "codefix", "scheduler.name": "fixed", "scheduler.turns": "1", "rollout.tasks_per_step": "1",
        "rollout.group_size": "2", "rollout.max_new_tokens": "4", "eval.tasks": "12", "eval.before": "true",
        "eval.after": "false", "trainer.steps": "1", "trainer.finetune": "full", "trainer.local_envs": str(local).lower(),
        "trainer.progress": "false"}
    _cli(["train", *(f"{k}={v}" for k, v in config.items())])
    trainer_ids = [t for t, _ in _episodes(run / "eval" / "before_trajectories.jsonl")]
    before = json.loads((run / "eval" / "before.json").read_text())

    _cli(["eval", "--model", str(run), "--tasks", "12", "--local" if local else "--servers"])
    eval_ids = [t for t, _ in _episodes(run / "eval" / "test-k1.jsonl")]
    cli = json.loads((run / "eval" / "test-k1.json").read_text())

    assert trainer_ids == eval_ids and len(trainer_ids) == 12
    assert set(trainer_ids) <= set(test) and not set(trainer_ids) & train, "a training task was evaluated as held out"
    expected = {}
    for tid in trainer_ids:
        expected[spec.category(tid)] = expected.get(spec.category(tid), 0) + 1
    assert {c: row["n"] for c, row in before["categories"].items()} == expected
    assert {c: row["n"] for c, row in cli["categories"].items()} == expected

"""The trainer's before/after evaluation follows the same plan as ``agentgym eval``: k > 1 at
temperature 0 samples at rollout.temperature (and says so), the horizon is the scheduler's final
one, and ``meta`` names model, env, split and k. after.json and ``agentgym eval --model RUN``
agree on the same checkpoint."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import tiny_config  # noqa: E402

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling")
CLI = [sys.executable, "-m", "agentgym_core.cli.main"]


def _cli(args: list[str]) -> tuple[int, str]:
    proc = subprocess.run(CLI + args, env=ENV, capture_output=True, text=True, timeout=400)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_trainer_evaluation_matches_agentgym_eval(tmp_path):
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    run = runs / "ev"
    # 1 step at horizon 2 (rounds [2, 3], 2 steps a stage): the scheduler's final horizon is 3.
    rc, out = _cli(["train", *tiny_config(model, runs, name="ev", **{
        "trainer.steps": "1", "eval.k": "2", "eval.tasks": "1", "eval.temperature": "0",
        "rollout.temperature": "0.7", "eval.before": "true", "eval.after": "true"})])
    assert rc == 0, out
    assert "eval before: k=2 samples per task: sampling at the rollout temperature 0.7" in out, out
    assert "eval after: k=2 samples per task" in out, out
    before = json.loads((run / "eval" / "before.json").read_text())
    after = json.loads((run / "eval" / "after.json").read_text())
    from importlib import metadata

    plugin = f"agentgym-env-babyai {metadata.version('agentgym-env-babyai')}"  # which env code played
    assert before["meta"] == {"tasks": 1, "max_turns": 3, "temperature": 0.7, "model": str(model),
                              "env": "babyai", "split": "test", "k": 2, "env_plugin": plugin, "strategy": "default"}
    assert after["meta"]["model"] == str(run / "checkpoints" / "step_000001")
    assert after["overall"]["n"] == 2 and after["k"] == 2

    rc, out = _cli(["eval", "--model", str(run), "--local"])
    assert rc == 0, out
    assert "sampling at the rollout temperature 0.7" in out and "horizon 3 turns" in out, out
    cli = json.loads((run / "eval" / "test-k2.json").read_text())
    assert cli["meta"] == after["meta"], (cli["meta"], after["meta"])

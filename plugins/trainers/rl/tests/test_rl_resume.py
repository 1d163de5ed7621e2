"""Checkpoints: kill -9 mid-run then ``--resume`` continues exactly; checkpoints load with plain transformers."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import kill_after_checkpoint, tiny_config, train_cli  # noqa: E402

# Deterministic batching (one episode in flight) so two runs can be compared token for token.
EXTRA = {"rollout.concurrency": "1", "trainer.steps": "5"}


def _steps(run: Path) -> dict[int, list]:
    out = {}
    for f in sorted((run / "trajectories").glob("step_*.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        out[int(f.stem[5:])] = [(r["task_id"], r["group_id"], r["max_turns"], r["token_ids"]) for r in rows]
    return out


@pytest.mark.slow
def test_kill_9_then_resume_matches_uninterrupted_run(tmp_path):
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    ref = train_cli(tiny_config(model, runs, name="straight", **EXTRA))
    out, _ = ref.communicate(timeout=400)
    assert ref.returncode == 0, out

    victim = train_cli(tiny_config(model, runs, name="killed", **EXTRA), start_new_session=True)
    resumed_from = kill_after_checkpoint(victim, runs / "killed", 2)
    assert 2 <= resumed_from < 5

    again = train_cli(["--resume", str(runs / "killed")])
    out, _ = again.communicate(timeout=400)
    assert again.returncode == 0, out

    a, b = _steps(runs / "straight"), _steps(runs / "killed")
    assert sorted(a) == sorted(b) == [1, 2, 3, 4, 5]
    for step in range(resumed_from + 1, 6):
        # same tasks (data cursor), same horizon (scheduler stage), same sampled tokens (RNG + weights)
        assert a[step] == b[step], f"step {step} differs after resuming from step {resumed_from}"
    ma = [json.loads(x) for x in (runs / "straight" / "metrics.jsonl").read_text().splitlines()]
    mb = [json.loads(x) for x in (runs / "killed" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in mb] == [1, 2, 3, 4, 5]
    assert [m["horizon"] for m in ma] == [m["horizon"] for m in mb] == [2, 2, 3, 3, 3]
    sa = json.loads((runs / "straight" / "checkpoints" / "step_000005" / "trainer_state.json").read_text())
    sb = json.loads((runs / "killed" / "checkpoints" / "step_000005" / "trainer_state.json").read_text())
    assert sa["cursor"] == sb["cursor"] and sa["scheduler"] == sb["scheduler"]
    assert sa["param_sha256"] == sb["param_sha256"], "weights after the resumed run differ"

    # the checkpoint is a plain Hugging Face model folder
    import torch
    from transformers import AutoModelForCausalLM

    ckpt = runs / "killed" / "checkpoints" / "step_000005"
    lm = AutoModelForCausalLM.from_pretrained(str(ckpt))
    with torch.no_grad():
        assert torch.isfinite(lm(input_ids=torch.tensor([[1, 2, 3]])).logits).all()


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "config.yaml").write_text("run: {name: x}\n")
    proc = train_cli(["--resume", str(tmp_path)])
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "no complete checkpoint" in out, out

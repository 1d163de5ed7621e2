"""The sft trainer with a tiny model: loss on replies only, packing, the run directory, resume, held-out checks."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")

from agentgym_hf.testing import tiny_model_dir  # noqa: E402

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,sft,scaling")
CLI = [sys.executable, "-m", "agentgym_core.cli.main"]


def sft_config(model: Path, out: Path, name: str = "sft", **extra: str | None) -> list[str]:
    """Dotlist overrides of a short sft run on babyai demonstrations (recorded by the heuristic expert)."""
    items = {
        "run.name": name, "run.output_dir": str(out), "run.seed": "5",
        "model.path": str(model), "model.max_context": "1024", "model.dtype": "fp32",
        "env.name": "babyai", "env.levels": "[GoToLocal]", "env.brief": "true", "env.test_seeds": "4",
        "agent.action_format": "free", "agent.instruction_position": "after_observation",
        "scheduler.turns": "6", "rollout.max_new_tokens": "6", "eval.tasks": "2",
        "trainer.name": "sft", "trainer.demos_expert": "heuristic", "trainer.demos_episodes": "6",
        "trainer.epochs": "2", "trainer.batch_size": "2", "trainer.lr": "1e-3", "trainer.finetune": "full",
        "trainer.save_every": "2", "trainer.keep_checkpoints": "0", "trainer.local_envs": "true",
        "trainer.progress": "false",
    }
    items.update(extra)
    return [f"{k}={v}" for k, v in items.items() if v is not None]


def _train(args: list[str], timeout: int = 400) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "train", *args], env=ENV, capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(900)  # four short trainings
def test_sft_run_directory_and_resume(tmp_path):
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    proc = _train(sft_config(model, runs, "straight"))
    assert proc.returncode == 0, proc.stderr
    run = runs / "straight"
    demos = [json.loads(line) for line in (run / "demos.jsonl").read_text().splitlines()]
    assert len(demos) == 6 and all(d["split"] == "train" for d in demos)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = len(rows)
    assert steps == 6  # 2 epochs x 6 conversations / batch 2
    assert rows[-1]["loss"] < rows[0]["loss"] and all(math.isfinite(r["loss"]) for r in rows)
    assert 0 <= rows[-1]["token_accuracy"] <= 1 and rows[-1]["epoch"] == pytest.approx(2.0)
    for tag in ("before", "after"):
        summary = json.loads((run / "eval" / f"{tag}.json").read_text())
        assert summary["overall"]["n"] == 2
    assert json.loads((run / "eval" / "after.json").read_text())["meta"]["model"].endswith("step_000006")
    state = json.loads((run / "checkpoints" / "step_000006" / "trainer_state.json").read_text())
    assert state["trainer"] == "sft" and state["data"]["conversations"] == 6
    assert "held-out success  after" in proc.stdout

    # stop after step 2 (trainer.steps=2), then resume with the full length: the same weights as straight
    part = _train(sft_config(model, runs, "resumed", **{"trainer.steps": "2", "eval.after": "false"}))
    assert part.returncode == 0, part.stderr
    again = _train(["--resume", str(runs / "resumed"), "trainer.steps=6", "eval.after=true"])
    assert again.returncode == 0, again.stderr
    a = (run / "checkpoints" / "step_000006" / "model.safetensors").read_bytes()
    b = (runs / "resumed" / "checkpoints" / "step_000006" / "model.safetensors").read_bytes()
    assert a == b, "resumed sft weights differ from an uninterrupted run"
    ra = [json.loads(line)["loss"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    rb = [json.loads(line)["loss"] for line in (runs / "resumed" / "metrics.jsonl").read_text().splitlines()]
    assert ra == rb


def test_sft_refuses_held_out_demonstrations(tmp_path):
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    proc = _train(sft_config(model, runs, "ok", **{"trainer.steps": "1", "eval.before": "false",
                                                  "eval.after": "false"}))
    assert proc.returncode == 0, proc.stderr
    data = tmp_path / "leaky.jsonl"
    rows = [json.loads(line) for line in (runs / "ok" / "demos.jsonl").read_text().splitlines()]
    rows[0]["task_id"] = 1000  # the first test id of GoToLocal (1000 train seeds)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bad = _train(sft_config(model, runs, "leak", **{"trainer.demos_expert": None, "trainer.data": str(data)}))
    assert bad.returncode == 1 and "held-out task ids" in bad.stderr


def test_packing_trains_like_separate_rows(tmp_path):
    """A packed row's loss and gradients equal those of its conversations run one by one."""
    from agentgym_core.rollout.chat import ChatFormat
    from agentgym_hf.loading import load_model
    from agentgym_trainer_sft.data import Row, collate, encode_all
    from agentgym_trainer_sft.loss import reply_loss

    torch.manual_seed(0)
    lm, tok = load_model(str(tiny_model_dir(tmp_path)), dtype="fp32")
    chat = ChatFormat(tok)
    convs = [{"messages": [{"role": "user", "content": f"task {i} " * (i + 1)},
                           {"role": "assistant", "content": f"go {i}"}, {"role": "user", "content": "ok"},
                           {"role": "assistant", "content": "done" * (i + 1)}]} for i in range(3)]
    packed = encode_all(convs, chat, max_length=512, packing=True)
    alone = encode_all(convs, chat, max_length=512, packing=False)
    assert len(packed.rows) == 1 and len(alone.rows) == 3

    def loss_and_grad(rows: list[Row]) -> tuple[float, torch.Tensor]:
        lm.zero_grad()
        total = 0.0
        for row in rows:
            nll, _ = reply_loss(lm, collate([row], tok.pad_token_id), "cpu")
            nll.backward()
            total += float(nll.detach())
        return total, lm.get_output_embeddings().weight.grad.clone()

    la, ga = loss_and_grad(packed.rows)
    lb, gb = loss_and_grad(alone.rows)
    assert la == pytest.approx(lb, rel=1e-5)
    assert torch.allclose(ga, gb, atol=1e-5)
    batch = collate(alone.rows, tok.pad_token_id)  # padded rows: the loss ignores padding
    nll, _ = reply_loss(lm, batch, "cpu")
    assert float(nll.detach()) == pytest.approx(lb, rel=1e-5)


def test_data_from_a_hugging_face_dataset_folder(tmp_path):
    """trainer.data may be a dataset saved with save_to_disk (a DatasetDict's train split), or a JSONL folder."""
    datasets = pytest.importorskip("datasets")
    from agentgym_core.demos import DemosError, read_conversations

    rows = [{"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}],
             "task_id": i} for i in range(3)]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "flat"))
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "dict"))
    for folder in ("flat", "dict"):
        got = read_conversations(tmp_path / folder)
        assert [r["messages"] for r in got] == [r["messages"] for r in rows] and got[2]["task_id"] == 2
    (tmp_path / "jsonl").mkdir()
    (tmp_path / "jsonl" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    (tmp_path / "jsonl" / "b.jsonl").write_text(json.dumps(rows[2]) + "\n")
    assert len(read_conversations(tmp_path / "jsonl")) == 3
    datasets.Dataset.from_list([{"text": "x"}]).save_to_disk(str(tmp_path / "plain"))
    with pytest.raises(DemosError, match="no 'messages' column"):
        read_conversations(tmp_path / "plain")
    (tmp_path / "bad.jsonl").write_text('{"messages": []}\nnot json\n')
    with pytest.raises(DemosError, match="bad.jsonl:2 is not JSON"):
        read_conversations(tmp_path / "bad.jsonl")

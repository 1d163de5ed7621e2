"""``trainer.strategy: fsdp`` on CPU (gloo, 2 processes): the sharded update equals a one-process
update on the same global batch; kill -9 then ``--resume`` continues exactly; the consolidated
checkpoint is a plain Hugging Face folder holding the trained weights."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_engine_hf")
if not hasattr(torch.distributed, "is_available") or not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import tiny_config  # noqa: E402

HERE = Path(__file__).parent
ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling,shaping")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_sharded_update_equals_one_process_on_the_global_batch(tmp_path, finetune):
    """3 steps x 2 PPO epochs x 2 micro-batches at lr 1e-2 (so the old log-probs differ from the
    current ones): each rank updates on its half of the groups, FSDP reduce-scatters the gradients."""
    one, two = tmp_path / "one.pt", tmp_path / "two.pt"
    for cmd, out in (([sys.executable], one), (TORCHRUN, two)):
        proc = subprocess.run([*cmd, str(HERE / "fsdp_equivalence.py"), str(out), finetune], env=ENV,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = torch.load(one), torch.load(two)
    assert list(a["end"]) == list(b["end"])
    worst = max(float((a["end"][k] - b["end"][k]).abs().max()) for k in a["end"])
    assert worst < 1e-4, f"FSDP weights differ from the one-process update by {worst}"
    moved = max(float((a["end"][k] - a["start"][k]).abs().max()) for k in a["end"])
    assert moved > 100 * max(worst, 1e-7), f"the update moved the weights by only {moved}"


def _train(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "agentgym_core.cli.main", "train", *args], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def _steps(run: Path) -> dict[int, list]:
    out = {}
    for f in sorted((run / "trajectories").glob("step_*.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        out[int(f.stem[5:])] = sorted((r["group_id"], r["task_id"], r["token_ids"]) for r in rows)
    return out


@pytest.mark.timeout(1200)
def test_kill_9_then_resume_matches_an_uninterrupted_fsdp_run(tmp_path):
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    extra = {"trainer.steps": "3", "trainer.lr": "1e-2", "trainer.strategy": "fsdp", "trainer.algorithm": "reinforce_pp",
             "rollout.concurrency": "1", "rewards": "[{name: success}, {name: format, weight: 1.0}]"}
    straight = _train(["--num-processes", "2", *tiny_config(model, runs, name="straight", **extra)])
    out, _ = straight.communicate(timeout=600)
    assert straight.returncode == 0, out[-4000:]

    victim = _train(["--num-processes", "2", *tiny_config(model, runs, name="killed", **extra)], start_new_session=True)
    latest = runs / "killed" / "checkpoints" / "latest"
    deadline = time.time() + 500
    while time.time() < deadline and victim.poll() is None and not latest.exists():
        time.sleep(0.05)
    assert victim.poll() is None, "run finished before it could be killed: " + victim.stdout.read()[-3000:]
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    resumed_from = int(latest.read_text().strip()[5:])
    assert resumed_from in (1, 2)
    again = _train(["--num-processes", "2", "--resume", str(runs / "killed")])
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out[-4000:]

    a, b = _steps(runs / "straight"), _steps(runs / "killed")
    assert sorted(a) == sorted(b) == [1, 2, 3]
    for step in range(resumed_from + 1, 4):
        assert a[step] == b[step], f"step {step} differs after resuming from step {resumed_from}"
    ckpt_a, ckpt_b = runs / "straight" / "checkpoints" / "step_000003", runs / "killed" / "checkpoints" / "step_000003"
    state = json.loads((ckpt_b / "trainer_state.json").read_text())
    assert state["strategy"] == "fsdp" and state["world_size"] == 2
    assert (ckpt_b / "sharded" / ".metadata").is_file()  # each process's shard, for exact resume

    # The consolidated folder is plain transformers, and holds the same trained weights in both runs.
    from transformers import AutoModelForCausalLM

    wa = AutoModelForCausalLM.from_pretrained(str(ckpt_a)).state_dict()
    wb = AutoModelForCausalLM.from_pretrained(str(ckpt_b)).state_dict()
    w0 = AutoModelForCausalLM.from_pretrained(str(model)).state_dict()
    assert max(float((wa[k] - wb[k]).abs().max()) for k in wa) < 1e-6
    assert max(float((wa[k] - w0[k]).abs().max()) for k in wa) > 1e-4, "training changed nothing"

"""``agentgym train --num-processes 2`` on CPU (gloo): rollout split across ranks, weights stay identical."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")
pytest.importorskip("agentgym_env_babyai")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import tiny_config  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("staleness", ["0", "1"], ids=["sync", "pipelined"])
def test_two_processes_keep_identical_parameters(tmp_path, staleness):
    """Synchronous, and with a rollout worker per rank (trainer.max_staleness=1): each rank plays its own
    task group, with the weights of the step before in the pipelined run."""
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    # A reward every episode can earn (the format penalty) so that the update is not a no-op.
    args = tiny_config(model, runs, name="ddp", **{"trainer.steps": "2", "trainer.lr": "1e-2", "trainer.algorithm": "reinforce_pp",
                                                   "rewards": "[{name: success}, {name: format, weight: 1.0}]",
                                                   "trainer.max_staleness": staleness})
    env = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling,shaping")
    proc = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "train", "--num-processes", "2", *args],
                          env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = runs / "ddp"
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["processes"] for m in metrics] == [2, 2]
    assert all(m["episodes"] == 4 for m in metrics)  # 2 tasks x 2 episodes, one task group per rank
    tasks = [json.loads(x)["group_id"] for x in (run / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    assert sorted(set(tasks)) == [0, 1]
    first = json.loads((run / "checkpoints" / "step_000001" / "trainer_state.json").read_text())
    last = json.loads((run / "checkpoints" / "step_000002" / "trainer_state.json").read_text())
    assert len(first["param_sha256"]) == 2
    assert first["param_sha256"][0] == first["param_sha256"][1], "ranks diverged after an update"
    assert last["param_sha256"][0] == last["param_sha256"][1]
    assert first["param_sha256"][0] != last["param_sha256"][0], "the update changed nothing"
    assert metrics[-1]["grad_norm"] > 0
    if staleness == "1":
        assert [m["staleness_max"] for m in metrics] == [0, 1]
        versions = {t["version"] for line in (run / "trajectories" / "step_000002.jsonl").read_text().splitlines()
                    for t in json.loads(line)["turns"]}
        assert versions == {0}  # both ranks' second batches were sampled by the first weights
        pending = run / "checkpoints" / "step_000001" / "pending"  # each rank's batch played ahead, for a resume
        assert sorted(p.name for p in pending.iterdir()) == ["rank0", "rank1"]
        assert all((pending / r / "step_000001.jsonl").is_file() for r in ("rank0", "rank1"))

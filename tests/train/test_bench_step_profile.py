"""``bench/step_profile.py`` as a user runs it: a real training step of a tiny model on BabyAI, in a
subprocess, with the per-phase table and the closing JSON line the issue asks for."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_trainer_rl")

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("native_bf16", ["0", "1"], ids=["fp32", "bf16"])
def test_step_profile_reports_every_phase_against_the_peak_of_its_dtype(tmp_path, native_bf16):
    from agentgym_hf.testing import tiny_model_dir

    model = tiny_model_dir(tmp_path)
    cmd = [sys.executable, str(REPO / "bench" / "step_profile.py"), "-c", str(REPO / "configs" / "quickstart.yaml"),
           f"model.path={model}", "model.dtype=auto", "rollout.tasks_per_step=2", "rollout.group_size=2",
           "trainer.grad_accum=1", "scheduler.rounds=[2]",
           "trainer.entropy_coef=0.1",  # every row has a gradient: the tiny model earns no reward to rank them
           "trainer.progress=false", "--steps", "1", "--warmup", "1",
           "--json", str(tmp_path / "profile.json")]
    env = {**os.environ, "AGENTGYM_CPU_BF16": native_bf16, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    dtype = "bf16" if native_bf16 == "1" else "fp32"
    assert result["engine_dtype"] == ("bfloat16" if dtype == "bf16" else "float32")
    assert result["update_dtype"] == dtype
    for key in ("prefill_peak_frac", "update_peak_frac", "backward_peak_frac", "decode_peak_frac"):
        assert 0 < result[key] < 2, (key, result)  # a tiny model is far from any peak, but it did the work
    assert result["step_s"] > 0 and 0 < result["rollout_s"] < result["step_s"] and result["update_s"] > 0
    assert result["peak_fp32_gflops"] > 0 and result["peak_bf16_gflops"] > 0
    table = "\n".join(lines)
    for phase in ("prefill", "decode", "rollout other", "update forward", "backward", "optimizer", "weight sync"):
        assert f"| {phase} |" in table, table
    saved = json.loads((tmp_path / "profile.json").read_text())
    assert saved["phases"]["prefill"]["counts"]["tokens"] > 0 and len(saved["metrics"]) == 1
    assert saved["phases"]["update forward"]["counts"]["head"] > 0  # the LM head ran on the replies

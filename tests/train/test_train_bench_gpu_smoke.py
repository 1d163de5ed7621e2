"""``bench/gpu.py`` keeps working: its CPU smoke mode runs every phase the GPU run has.

The GPU run itself happens only where a card is lent (no CI has one), so this is what keeps
the script from rotting between those runs: rollout through the hf engine, HF generate with
both caches, and the trainer's update, with the JSON it writes under ``$OUT``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_engine_hf")
pytest.importorskip("agentgym_trainer_rl")

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_bench_smoke_mode_runs_every_phase(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path))
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu.py"), "--smoke"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "gpu_bench.json").read_text())
    assert result["smoke"] is True and result["device"].startswith("cpu")
    rows = {r["phase"]: r for r in result["rows"]}
    for batch in (4, 8):
        rollout = rows[f"rollout hf engine, batch {batch} (groups of 4)"]
        assert rollout["tokens"] > 0 and rollout["prefill_tokens"] > 0
        assert rollout["prefill_tokens"] <= rollout["episode_tokens"]  # the per-episode KV cache is reused
        assert rows[f"hf generate only, dynamic cache, batch {batch}"]["tokens"] == batch * 8
    shared, plain = (next(r for name, r in rows.items() if name.startswith("train rl Updater") and what in name)
                     for what in ("group prompt once", "no prefix sharing"))
    for train in (shared, plain):
        assert "error" not in train and train["updates"] == 1
    # MFU counts only the tokens the update ran: never more than the batch holds, and fewer
    # when a group's common prompt runs once.
    assert 0 < shared["run_tokens"] < plain["run_tokens"] <= plain["tokens"] == shared["tokens"]
    assert "| train rl Updater" in proc.stdout
    # the fixed b16x2048 update (4x96 here), plain and sharded by FSDP on one process: the same
    # batch, so the same token count, one optimizer step each
    fixed = [r for name, r in rows.items() if name.startswith("train b4x96")]
    assert [("fsdp" in r["phase"] and "no fsdp" not in r["phase"]) for r in fixed] == [False, True]
    for r in fixed:
        assert "error" not in r, r
        assert r["tokens"] == 4 * 96 and r["updates"] == 1
    # one whole GRPO step: 8 episodes of 2 turns, rolled out and then trained on
    step = rows["GRPO step: rollout 8 episodes x 2 turns (decode=plain) + update"]
    assert "error" not in step and step["updates"] == 1
    assert step["rollout_seconds"] + step["update_seconds"] <= step["seconds"]

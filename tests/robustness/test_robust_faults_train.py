"""Fault injection into the real ``rl`` trainer (in subprocesses): SIGKILL during a checkpoint write,
a disk-full error while writing one, an engine error mid-run. The previous checkpoint must still load."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("agentgym_trainer_rl", reason="needs the rl trainer plugin (pip install -e plugins/trainers/rl)")
pytest.importorskip("agentgym_env_babyai", reason="the tiny run trains on babyai (pip install -e plugins/envs/babyai)")

pytestmark = pytest.mark.slow
DRIVER = str(Path(__file__).resolve().parent / "agentgym_robust_train_driver.py")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    from agentgym_hf.loading import load_tokenizer, tiny_random_model

    target = tmp_path_factory.mktemp("model") / "tiny"
    tok = load_tokenizer("smollm2-135m-instruct")
    tiny_random_model(tok, seed=3).save_pretrained(str(target))
    tok.save_pretrained(str(target))
    return target


def _overrides(model: Path, out: Path) -> list[str]:
    items = {
        "run.name": "faulty", "run.output_dir": str(out), "run.seed": "7",
        "model.path": str(model), "model.max_context": "512",
        "env.name": "babyai", "env.levels": "[GoToRedBallGrey]", "engine.name": "hf",
        "scheduler.name": "fixed", "rollout.tasks_per_step": "2", "rollout.group_size": "2",
        "rollout.max_new_tokens": "6", "eval.before": "false", "eval.after": "false",
        "trainer.name": "rl", "trainer.steps": "2", "trainer.finetune": "full", "trainer.save_every": "1",
        "trainer.keep_checkpoints": "0", "trainer.local_envs": "true", "trainer.progress": "false",
    }
    return [f"{k}={v}" for k, v in items.items()]


def _driver(mode: str, marker: Path, model: Path, out: Path) -> subprocess.Popen:
    """The faulty trainer run, its output in ``out/../output.log`` (a file: a full pipe would block it)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    with open(out.parent / "output.log", "wb") as log:
        return subprocess.Popen([sys.executable, DRIVER, mode, "2", str(marker), "--", *_overrides(model, out)],
                                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _run_dir(out: Path) -> Path:
    dirs = [p for p in out.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def _assert_step1_loads(run: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from agentgym_core.rundir import RunDir

    ckpt = RunDir(run).latest_checkpoint()
    assert ckpt is not None and ckpt.name == "step_000001", sorted(p.name for p in (run / "checkpoints").iterdir())
    model = AutoModelForCausalLM.from_pretrained(str(ckpt))
    assert sum(p.numel() for p in model.parameters()) > 0
    state = torch.load(ckpt / "trainer_state.pt", weights_only=True)
    assert isinstance(state, dict)


@pytest.fixture(scope="module")
def drivers(tmp_path_factory, model_dir):
    """The faulty trainer runs, started together to save wall time; killed if a test leaves them."""
    root = tmp_path_factory.mktemp("faults")
    runs = {}
    for mode in ("stall", "enospc", "engine"):
        base = root / mode
        base.mkdir()
        runs[mode] = (_driver(mode, base / "writing", model_dir, base / "runs"), base)
    yield runs
    for proc, _ in runs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


@pytest.mark.timeout(300)
def test_sigkill_during_checkpoint_write_keeps_previous(drivers):
    proc, tmp_path = drivers["stall"]
    marker = tmp_path / "writing"
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert proc.poll() is None, (tmp_path / "output.log").read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the trainer never reached its second checkpoint"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)  # mid-write of checkpoint 2
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    run = _run_dir(tmp_path / "runs")
    assert (run / "checkpoints" / ".tmp-step_000002").exists()  # the torn write, never renamed into place
    _assert_step1_loads(run)


@pytest.mark.timeout(300)
def test_disk_full_on_checkpoint_is_clear_and_keeps_previous(drivers):
    proc, tmp_path = drivers["enospc"]
    proc.wait(timeout=240)
    text = (tmp_path / "output.log").read_text(errors="replace")
    print(text[-2000:])
    assert proc.returncode != 0
    assert "No space left on device" in text
    run = _run_dir(tmp_path / "runs")
    _assert_step1_loads(run)
    assert "Traceback" not in text, text[-2000:]
    assert "could not write checkpoint" in text and "the previous checkpoint" in text and "--resume" in text
    assert not (run / "checkpoints" / ".tmp-step_000002").exists()


@pytest.mark.timeout(300)
def test_engine_error_mid_run_is_clear_and_keeps_checkpoint(drivers):
    proc, tmp_path = drivers["engine"]
    proc.wait(timeout=240)
    text = (tmp_path / "output.log").read_text(errors="replace")
    assert proc.returncode != 0
    assert "injected engine failure: CUDA error" in text
    _assert_step1_loads(_run_dir(tmp_path / "runs"))

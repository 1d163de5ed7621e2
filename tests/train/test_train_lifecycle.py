"""Core's trainer lifecycle: both bundled trainers fire the lifecycle hooks in the same order, and end cleanly."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_trainer_sft")
pytest.importorskip("agentgym_trainer_rl")

from agentgym_hf.testing import tiny_model_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "plugins" / "trainers" / "rl" / "tests"))
sys.path.insert(0, str(REPO / "plugins" / "trainers" / "sft" / "tests"))
from rl_helpers import tiny_config  # noqa: E402
from test_sft_trainer import sft_config  # noqa: E402


def recorder(calls: list):
    from agentgym_core import hookimpl

    plugin = types.ModuleType("lifecycle_recorder")

    @hookimpl
    def on_run_start(run_dir, config, main):
        calls.append(("start", config.trainer.name, (Path(run_dir) / "eval" / "before.json").exists()))

    @hookimpl
    def on_step_end(step, metrics, run_dir):
        calls.append(("step", step, metrics["step"]))

    @hookimpl
    def on_checkpoint(step, path, run_dir):
        calls.append(("checkpoint", step, Path(path).name))

    @hookimpl
    def on_run_end(run_dir, metrics, status, main):
        calls.append(("end", status, (Path(run_dir) / "eval" / "after.json").exists()))

    plugin.on_run_start, plugin.on_step_end, plugin.on_checkpoint, plugin.on_run_end = (
        on_run_start, on_step_end, on_checkpoint, on_run_end)
    return plugin


def _fit(overrides: list[str], plugin_manager, register_plugin) -> list:
    from agentgym_core.config import build_component, load_config

    calls: list = []
    register_plugin(recorder(calls), "recorder")
    cfg = load_config(None, overrides, manager=plugin_manager)
    build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager).fit()
    return calls


@pytest.mark.timeout(900)
def test_hooks_fire_in_the_same_order_for_rl_and_sft(tmp_path, plugin_manager, register_plugin):
    import torch

    torch.set_num_threads(1)
    plugin_manager.load_entrypoints()
    model = tiny_model_dir(tmp_path)
    same = {"trainer.steps": "3", "trainer.save_every": "2", "eval.before": "true", "eval.after": "true",
            "eval.tasks": "1"}
    rl = _fit(tiny_config(model, tmp_path / "runs", "rl", **same), plugin_manager, register_plugin)
    plugin_manager.unregister("recorder")
    sft = _fit(sft_config(model, tmp_path / "runs", "sft", **same), plugin_manager, register_plugin)
    expected = [("step", 0, 1), ("step", 1, 2), ("checkpoint", 1, "step_000002"), ("step", 2, 3),
                ("checkpoint", 2, "step_000003"), ("end", "completed", True)]
    # before.json is written after on_run_start (the evaluation runs inside the run), after.json before on_run_end
    assert rl == [("start", "rl", False), *expected]
    assert sft == [("start", "sft", False), *expected]
    for name in ("rl", "sft"):
        run = tmp_path / "runs" / name
        assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
        assert (run / "checkpoints" / "latest").read_text().strip() == "step_000003"


@pytest.mark.slow
@pytest.mark.timeout(900)  # two trainings and the generated plugin's own tests
def test_new_trainer_plugin_trains_resumes_and_evaluates(tmp_path):
    """`agentgym new plugin NAME --kind trainer`: installed with pip, it trains with core's lifecycle."""
    import os
    import subprocess

    cli = [sys.executable, "-m", "agentgym_core.cli.main"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")}
    made = subprocess.run([*cli, "new", "plugin", "prompts", "--kind", "trainer", "-o", str(tmp_path)], env=env,
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(site), str(tmp_path / "agentgym-trainer-prompts")],
                   check=True, capture_output=True, text=True)
    env.update(PYTHONPATH=str(site), OMP_NUM_THREADS="1")
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(tmp_path / "agentgym-trainer-prompts" / "tests")], env=env, capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    args = tiny_config(tiny_model_dir(tmp_path), tmp_path / "runs", "prompts", **{
        "trainer.name": "prompts", "trainer.steps": "2", "trainer.save_every": "1", "eval.after": "true",
        "eval.tasks": "1", "trainer.lr": None, "trainer.finetune": None, "trainer.keep_checkpoints": None,
        "trainer.prompts": "['', 'Reply with one action only.']"})
    first = subprocess.run([*cli, "train", *args], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "runs" / "prompts"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["arm"] for r in rows] == [0, 1]  # UCB tries each prompt once first
    assert (run / "eval" / "after.json").is_file() and (run / "checkpoints" / "step_000002" / "trainer_state.json").is_file()
    again = subprocess.run([*cli, "train", "--resume", str(run), "trainer.steps=3"], env=env, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    state = json.loads((run / "checkpoints" / "step_000003" / "trainer_state.json").read_text())
    assert sum(state["counts"]) == 3

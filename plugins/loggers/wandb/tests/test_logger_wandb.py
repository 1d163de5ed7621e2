"""The W&B logger: an offline run in the run directory with the config, every step and the evaluations;
inert without wandb (a warning only when AGENTGYM_WANDB asks for it); a W&B error never ends training."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from omegaconf import OmegaConf

from agentgym_core.plugins import get_plugin_manager


def _hooks(tmp_path, monkeypatch):
    """Fire the lifecycle hooks as the trainer does, through a plugin manager with only this plugin."""
    monkeypatch.setenv("AGENTGYM_LOAD_PLUGINS", "wandb")
    for var in ("WANDB_MODE", "WANDB_API_KEY", "AGENTGYM_WANDB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    run_dir = tmp_path / "runs" / "demo"
    (run_dir / "eval").mkdir(parents=True)
    (run_dir / "eval" / "after.json").write_text(json.dumps({"overall": {"n": 16, "success_rate": 0.4375}}))
    config = OmegaConf.create({"run": {"name": "demo", "seed": 3}, "env": {"name": "babyai", "token": "secret"},
                               "trainer": {"lr": 1e-3}})
    hook = get_plugin_manager().hook
    hook.on_run_start(run_dir=str(run_dir), config=config, main=True)
    for step, success in enumerate([0.0, 0.25, float("nan")]):
        hook.on_step_end(step=step, metrics={"success_rate": success, "loss": 0.5, "note": "x"}, run_dir=str(run_dir))
    hook.on_run_end(run_dir=str(run_dir), metrics={"success_rate": 0.25}, status="completed", main=True)
    return run_dir


def test_offline_run_in_the_run_directory(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="wandb is not installed (pip install wandb); the logger is then inert, "
                                        "see test_without_wandb_the_plugin_is_inert")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_dir = _hooks(tmp_path, monkeypatch)
    stopped = [str(w.message) for w in caught if "W&B logging stopped" in str(w.message)]
    assert not stopped, stopped
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    # wandb >= 0.19 writes an offline run as one record file (protobuf records, read by `wandb sync`).
    (records,) = offline.glob("run-*.wandb")
    data = records.read_bytes()
    assert data.startswith(b":W&B")
    assert b"eval/after/success_rate" in data and b"0.4375" in data  # the evaluation, in the summary
    assert b"trainer" in data and b"babyai" in data and b"<redacted>" in data and b"secret" not in data
    assert data.count(b"loss") >= 3  # one history record per step


def test_without_wandb_the_plugin_is_inert(tmp_path):
    code = (
        "import sys, warnings; sys.modules['wandb'] = None\n"  # import wandb -> ImportError
        "from agentgym_logger_wandb import logger\n"
        "import os\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    logger.start(sys.argv[1], {})\n"
        "    logger.log_step(sys.argv[1], 0, {'loss': 1.0})\n"
        "    logger.finish(sys.argv[1], {}, 'completed')\n"
        "print(len(w), [str(x.message)[:30] for x in w], os.path.exists(sys.argv[1] + '/wandb'))\n")
    def run(flag: str) -> str:
        env = {"PATH": "/usr/bin:/bin", "AGENTGYM_WANDB": flag}
        return subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert run("") == "0 [] False"
    assert run("1") == "1 ['AGENTGYM_WANDB is set but wand'] False"


def test_a_wandb_error_is_one_warning(tmp_path, monkeypatch):
    from agentgym_logger_wandb import logger

    class Broken:
        def log(self, *a, **k):
            raise RuntimeError("disk full")

        def finish(self, exit_code=0):
            self.finished = exit_code

    run = logger._RUNS[str(tmp_path)] = Broken()
    with pytest.warns(UserWarning, match=r"W&B logging stopped for .* \(wandb.log failed: RuntimeError: disk full\)"):
        logger.log_step(str(tmp_path), 0, {"loss": 1.0})
    assert str(tmp_path) not in logger._RUNS and run.finished == 1
    logger.log_step(str(tmp_path), 1, {"loss": 1.0})  # nothing left to log to: no error

"""Shared by the rl trainer tests: a tiny run config, and an hf engine that keeps its own weights.

The tiny model folder itself is ``agentgym_hf.testing.tiny_model_dir``.
"""
from __future__ import annotations

from pathlib import Path


def tiny_config(model: Path, out: Path, name: str = "tiny", **extra: str | None) -> list[str]:
    """Dotlist overrides of a short babyai run with in-process envs."""
    items = {
        "run.name": name, "run.output_dir": str(out), "run.seed": "7",
        "model.path": str(model), "model.max_context": "1024",
        "env.name": "babyai", "env.levels": "[GoToRedBallGrey]",
        "engine.name": "hf", "scheduler.name": "scaling_inter", "scheduler.rounds": "[2,3]", "scheduler.step_interval": "2",
        "rollout.tasks_per_step": "2", "rollout.group_size": "2", "rollout.max_new_tokens": "8",
        "rollout.dump_trajectories": "true",
        "eval.tasks": "2", "eval.before": "false", "eval.after": "false",
        "trainer.name": "rl", "trainer.steps": "4", "trainer.lr": "1e-3", "trainer.finetune": "full",
        "trainer.save_every": "1", "trainer.keep_checkpoints": "0", "trainer.local_envs": "true",
        "trainer.progress": "false",
    }
    items.update(extra)  # a key given as None is dropped (another env's or scheduler's option)
    return [f"{k}={v}" for k, v in items.items() if v is not None]


def train_two_steps(plugin_manager, register_plugin, model: Path, out: Path, name: str, finetune: str,
                    **extra: str | None):
    """Register babyai, the hf engine, the rl trainer and ScalingInter-RL, train two steps of a tiny
    run (one turn, a gradient in every group through the entropy term) and return the trainer."""
    import torch

    from agentgym_core.config import build_component, load_config

    for mod in ("agentgym_env_babyai.plugin", "agentgym_engine_hf.plugin", "agentgym_trainer_rl.plugin",
                "agentgym_scheduler_scaling.plugin"):
        register_plugin(__import__(mod, fromlist=["x"]), mod)
    torch.set_num_threads(1)
    overrides = tiny_config(model, out, name=name, **{
        "trainer.steps": "2", "trainer.finetune": finetune, "trainer.lr": "5e-2",
        "trainer.lora_targets": "[q_proj,v_proj]", "trainer.save_every": "0", "rollout.concurrency": "1",
        "trainer.entropy_coef": "0.1",  # a gradient even when every episode of a group scores the same
        "scheduler.rounds": "[1]", **extra})
    cfg = load_config(None, overrides, plugin_manager)
    trainer = build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager)
    trainer.fit()
    return trainer


def train_cli(args: list[str], **popen: object):
    """``agentgym train ARGS`` in a subprocess (one torch thread, the plugins a babyai run needs), output piped."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling")
    return subprocess.Popen([sys.executable, "-m", "agentgym_core.cli.main", "train", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def kill_after_checkpoint(victim, run: Path, step: int, timeout: float = 300) -> int:
    """SIGKILL the process group of *victim* (a training subprocess started with ``start_new_session``) once
    *run* has a checkpoint at or after *step*; returns the step of the checkpoint a resume continues from."""
    import os
    import signal
    import time

    latest = run / "checkpoints" / "latest"
    deadline = time.time() + timeout
    while time.time() < deadline and victim.poll() is None:
        if latest.exists() and latest.read_text().strip() >= f"step_{step:06d}":
            break
        time.sleep(0.02)
    assert victim.poll() is None, "the run finished before it could be killed: " + victim.stdout.read()
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    return int(latest.read_text().strip()[5:])


def own_copy_engine_class(dtype: str = "fp32"):
    """An hf engine that loads its own copy of the weights from the model's folder, as vLLM does.

    The trainer must send it the policy's weights after every update
    (``test_rl_weight_sync.py``).
    """
    from agentgym_engine_hf.engine import HFEngine

    class OwnCopyEngine(HFEngine):
        Config = HFEngine.Config

        def __init__(self, model, tokenizer=None, **options):
            base = model.get_base_model() if hasattr(model, "get_base_model") else model
            super().__init__(base.config._name_or_path, tokenizer, **{**options, "dtype": dtype})

    return OwnCopyEngine


def __getattr__(name):  # "rl_helpers:OwnCopyEngine" as a registry import string, built on first use
    if name == "OwnCopyEngine":
        return own_copy_engine_class()
    if name == "OwnCopyBF16Engine":  # samples in another precision than the fp32 trainer
        return own_copy_engine_class("bf16")
    raise AttributeError(name)

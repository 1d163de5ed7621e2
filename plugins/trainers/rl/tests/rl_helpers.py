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

